"""The broker's security flags: loopback unless told, everything off unless switched on,
and combinations that cannot work refused at the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from impl.broker.config import USAGE_EXIT_CODE, parse_args

REQUIRED = ["--cluster", "a", "--zk", "127.0.0.1:2181", "--port", "6650", "--admin-port",
            "8080", "--session-expired-policy", "reconnect"]


def test_a_broker_listens_on_loopback_with_security_off_by_default() -> None:
    config = parse_args(REQUIRED)
    assert config.bind_host == "127.0.0.1"
    assert not config.security.authentication_enabled
    assert not config.security.debug_endpoints
    assert config.broker_url.startswith("pulsar://")


def test_the_flags_switch_authentication_authorization_and_tls_on(
        secret_key_file: Path) -> None:
    config = parse_args([*REQUIRED, "--bind-host", "0.0.0.0", "--authentication-enabled",
                         "--authorization-enabled", "--token-secret-key",
                         str(secret_key_file), "--superuser-roles", "admin, ops",
                         "--tls-cert-file", "c.pem", "--tls-key-file", "k.pem"])
    assert config.bind_host == "0.0.0.0"
    assert config.security.superuser_roles == {"admin", "ops"}
    assert config.broker_url.startswith("pulsar+ssl://")
    assert config.web_url.startswith("https://")


@pytest.mark.parametrize("flags", [
    ["--authorization-enabled"],
    ["--authentication-enabled"],
    ["--tls-cert-file", "c.pem"],
])
def test_settings_that_cannot_work_are_refused(flags: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args([*REQUIRED, *flags])
    assert exited.value.code == USAGE_EXIT_CODE
