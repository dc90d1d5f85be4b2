"""A network the Docker engine keeps with no container attached (a stale endpoint, the
engine's fault, which only a restart of dockerd clears) is named in a warning and does
not fail a teardown; anything else left still does. Played with stand-ins for the SDK,
since the engine's fault cannot be summoned."""

from __future__ import annotations

import logging
from typing import Any, cast

import docker.errors
import pytest
from docker import DockerClient

from harness.targets.docker import resources
from harness.targets.docker.resources import TeardownIncomplete, remove_run


class Network:
    def __init__(self, name: str, attached: dict[str, Any]) -> None:
        self.name = name
        self.attrs: dict[str, Any] = {"Labels": {"starquake": "r"}, "Containers": attached}

    def remove(self) -> None:
        raise docker.errors.APIError("409", explanation=f"network {self.name} has active "
                                                        "endpoints")

    def reload(self) -> None:
        pass


class Client:
    def __init__(self, networks: list[Network]) -> None:
        self.containers = self
        self.networks = self
        self._networks = networks

    def list(self, **_: Any) -> list[Network]:
        return self._networks if "all" not in _ else []


@pytest.fixture(autouse=True)
def no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "REMOVAL_PAUSE_S", 0.0)


def test_a_stale_network_is_named_in_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    client = cast(DockerClient, Client([Network("sq-r-wan", {})]))
    with caplog.at_level(logging.WARNING):
        removed = remove_run(client, "r")
    assert removed.networks == 0
    assert "sq-r-wan with no container attached" in caplog.text


def test_a_network_still_holding_a_container_fails_the_teardown() -> None:
    client = cast(DockerClient, Client([Network("sq-r-a", {"c1": {"Name": "sq-r-a-zk1"}})]))
    with pytest.raises(TeardownIncomplete, match="still present after removal: sq-r-a"):
        remove_run(client, "r")
