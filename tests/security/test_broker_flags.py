"""The broker's security flags: loopback unless told, everything off unless switched on,
and combinations that cannot work refused at the command line; a token run's brokers, on
either backend, find the files their flags name and present a superuser's token as
clients (`--broker-client-token-file`), which is the token their bookies take."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.targets.docker.images import NodeImage
from harness.targets.docker.node_specs import NodeSettings, bookie_spec, broker_spec
from harness.targets.run_auth import RunAuth
from impl.bookie.__main__ import bookie_config, parse_bookie_args
from impl.broker.config import USAGE_EXIT_CODE, parse_args
from impl.security.config import InvalidSecurityConfig
from wire.tokens import read_secret_key, verify

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


def test_a_token_run_gives_local_brokers_a_superusers_client_token(tmp_path: Path) -> None:
    security = parse_args([*REQUIRED, *RunAuth("k").local_broker_args(tmp_path)]).security
    assert security.token_secret_key is not None
    role = verify(read_secret_key(security.token_secret_key), security.broker_client_token()
                  or "")
    assert role in security.superuser_roles


def test_a_token_run_writes_the_files_its_flags_name_into_broker_containers() -> None:
    spec = broker_spec(NodeImage("image", "import", "python3", "java"), "a", "zk:2181",
                       "10.0.0.2", "reconnect", NodeSettings(auth=RunAuth("k")))
    assert spec.command[1:3] == ("-m", "impl.broker")
    security = parse_args(list(spec.command[3:])).security
    assert {security.token_secret_key, security.broker_client_token_file} <= set(spec.files)


BOOKIE_REQUIRED = ["--port", "3181", "--data-dir", "d", "--zk", "127.0.0.1:2181"]


def test_a_token_run_lets_only_its_brokers_use_the_bookies_on_either_backend(
        tmp_path: Path) -> None:
    auth = RunAuth("k")
    credentials = auth.credentials()
    bookie = bookie_config(parse_bookie_args([*BOOKIE_REQUIRED,
                                              *auth.local_bookie_args(tmp_path)]))
    assert bookie.refusal(credentials.token.encode()) is None  # what brokers present
    assert "may not use this bookie" in str(bookie.refusal(
        (credentials.unprivileged or "").encode()))
    spec = bookie_spec(NodeImage("image", "import", "python3", "java"), "zk:2181",
                       "10.0.0.3", NodeSettings(auth=auth))
    flags = list(spec.command)
    assert flags[flags.index("--token-secret-key") + 1] in spec.files
    assert flags[flags.index("--client-roles") + 1] == "starquake"


def test_a_bookie_key_without_the_roles_it_takes_is_refused(secret_key_file: Path) -> None:
    with pytest.raises(SystemExit):
        parse_bookie_args([*BOOKIE_REQUIRED, "--token-secret-key", str(secret_key_file)])


def test_without_the_client_token_flag_a_broker_presents_nothing() -> None:
    assert parse_args(REQUIRED).security.broker_client_token() is None


def test_the_client_token_is_read_from_its_file_and_an_unusable_file_refused_naming_the_flag(
        tmp_path: Path) -> None:
    token_file = tmp_path / "broker-client.token"
    token_file.write_text("a.token.value\n")
    config = parse_args([*REQUIRED, "--broker-client-token-file", str(token_file)])
    assert config.security.broker_client_token() == "a.token.value"
    assert "a.token.value" not in repr(config)
    token_file.write_text("\n")
    with pytest.raises(InvalidSecurityConfig, match=re.escape(
            f"--broker-client-token-file: token file {token_file} is empty")):
        config.security.broker_client_token()
    token_file.unlink()
    with pytest.raises(InvalidSecurityConfig, match=re.escape(
            f"--broker-client-token-file {token_file}: No such file or directory")):
        config.security.broker_client_token()
