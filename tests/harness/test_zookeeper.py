"""The ZooKeeper launcher: configuration, ensembles that survive a member's faults, clean stops."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.targets.local.zookeeper import ZooKeeperEnsemble, ZooKeeperNode
from harness.targets.local.zookeeper_config import ServerAddress, ZooKeeperSettings, render_zoo_cfg
from impl.metadata.errors import AlreadyExists, Unavailable
from impl.metadata.store import MetadataStore

SERVERS = [
    ServerAddress("zk-1", 2181, 2888, 3888),
    ServerAddress("zk-2", 2182, 2889, 3889),
    ServerAddress("zk-3", 2183, 2890, 3890),
]


def _cfg(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines())


def test_config_names_every_member_and_this_members_own_client_port() -> None:
    cfg = _cfg(render_zoo_cfg(2, SERVERS, "/data/zk-2"))
    assert cfg["server.1"] == "zk-1:2888:3888"
    assert cfg["server.3"] == "zk-3:2890:3890"
    assert (cfg["clientPortAddress"], cfg["clientPort"]) == ("zk-2", "2182")
    assert cfg["dataDir"] == "/data/zk-2"
    assert cfg["admin.enableServer"] == "false"
    assert "srvr" in cfg["4lw.commands.whitelist"].split(",")


def test_a_single_server_runs_standalone() -> None:
    cfg = _cfg(render_zoo_cfg(1, SERVERS[:1], "/d", ZooKeeperSettings(tick_time_ms=200,
                                                                        min_session_timeout_ms=400)))
    assert not any(key.startswith("server.") for key in cfg)
    assert (cfg["tickTime"], cfg["minSessionTimeout"]) == ("200", "400")


def test_bad_config_input_is_refused() -> None:
    with pytest.raises(ValueError, match="node id 4"):
        render_zoo_cfg(4, SERVERS, "/d")
    with pytest.raises(ValueError, match="min_session_timeout_ms"):
        ZooKeeperSettings(tick_time_ms=1000, min_session_timeout_ms=1000)


def _leader_index(ensemble: ZooKeeperEnsemble) -> int:
    modes = [node.mode() for node in ensemble.nodes]
    return modes.index("leader")


def _round_trip(store: MetadataStore, path: str, value: bytes, timeout: float = 30.0) -> None:
    """Write as a careful client does while the ensemble fails over: a write whose outcome
    is unknown (Unavailable) is tried again, and AlreadyExists then means it had landed."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            store.create(path, value)
            break
        except AlreadyExists:
            break
        except Unavailable:
            assert time.monotonic() < deadline, f"no write accepted within {timeout} s"
            time.sleep(0.1)
    assert store.get(path).data == value


@pytest.mark.zk
def test_three_nodes_keep_serving_with_one_killed(zk_ensemble3: ZooKeeperEnsemble) -> None:
    with MetadataStore.connect(zk_ensemble3.connect_string, operation_timeout=30.0) as store:
        _round_trip(store, "/before", b"1")
        victim = _leader_index(zk_ensemble3)
        zk_ensemble3.kill(victim)
        assert not zk_ensemble3.nodes[victim].running

        _round_trip(store, "/while-down", b"2")

        zk_ensemble3.restart(victim)
        direct = zk_ensemble3.nodes[victim].client_address
        with MetadataStore.connect(direct) as on_victim:
            assert on_victim.get("/while-down").data == b"2"


@pytest.mark.zk
def test_three_nodes_keep_serving_with_one_paused(zk_ensemble3: ZooKeeperEnsemble) -> None:
    with MetadataStore.connect(zk_ensemble3.connect_string, operation_timeout=30.0) as store:
        victim = _leader_index(zk_ensemble3)
        zk_ensemble3.pause(victim)

        _round_trip(store, "/while-paused", b"p")

        zk_ensemble3.resume(victim)
        zk_ensemble3.wait_serving(timeout=30.0)
        direct = zk_ensemble3.nodes[victim].client_address
        with MetadataStore.connect(direct) as on_victim:
            assert on_victim.get("/while-paused").data == b"p"


def _is_our_java(node: ZooKeeperNode, pid: int) -> bool:
    """Whether `pid` is still the member's JVM (a freed pid may belong to someone else)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False
    return str(node.config_path).encode() in cmdline


@pytest.mark.zk
def test_stop_leaves_no_java_behind(
    make_zk_ensemble: Callable[[int], ZooKeeperEnsemble],
) -> None:
    ensemble = make_zk_ensemble(3)
    pids = {node: node.pid for node in ensemble.nodes}
    assert all(pid is not None and _is_our_java(node, pid) for node, pid in pids.items())
    ensemble.pause(1)  # a frozen member must stop too

    ensemble.stop()

    assert [node.running for node in ensemble.nodes] == [False, False, False]
    assert not any(_is_our_java(node, pid) for node, pid in pids.items() if pid is not None)
    for pid in pids.values():
        assert pid is not None
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped: no zombie left either
