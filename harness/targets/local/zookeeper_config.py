"""ZooKeeper's `zoo.cfg`, as a pure function of the ensemble's addresses.

Kept apart from the process launcher so that any backend (local processes today, containers
later) renders the same configuration and differs only in the host names it passes in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ServerAddress:
    """Where one ensemble member listens: clients, followers (peer) and leader election."""

    host: str
    client_port: int
    peer_port: int
    election_port: int


@dataclass(frozen=True)
class ZooKeeperSettings:
    """Timing and admin settings shared by every member.

    The defaults favour quick fault tests: with a 500 ms tick a session can time out after
    one second and a paused leader is replaced within a few seconds.
    """

    tick_time_ms: int = 500
    init_limit_ticks: int = 20
    sync_limit_ticks: int = 5
    min_session_timeout_ms: int = 1000
    max_session_timeout_ms: int = 60_000
    # `srvr` tells a serving member from one still electing; `cons` which member serves
    # which session (a nemesis aiming at a client's server needs that).
    four_letter_words: tuple[str, ...] = ("srvr", "cons", "ruok", "mntr", "stat")

    def __post_init__(self) -> None:
        if self.tick_time_ms <= 0 or self.init_limit_ticks <= 0 or self.sync_limit_ticks <= 0:
            raise ValueError("tick time and limits must be positive")
        # ZooKeeper silently raises a minimum below two ticks to two ticks.
        if not 2 * self.tick_time_ms <= self.min_session_timeout_ms <= self.max_session_timeout_ms:
            raise ValueError(
                "need 2 * tick_time_ms <= min_session_timeout_ms <= max_session_timeout_ms, got "
                f"tick {self.tick_time_ms}, min {self.min_session_timeout_ms}, "
                f"max {self.max_session_timeout_ms}"
            )


def render_zoo_cfg(
    node_id: int,
    servers: Sequence[ServerAddress],
    data_dir: str,
    settings: ZooKeeperSettings = ZooKeeperSettings(),
) -> str:
    """The `zoo.cfg` of member `node_id` (1-based, its `myid`) of the ensemble `servers`
    (listed in id order). One server runs standalone; more form a quorum."""
    if not 1 <= node_id <= len(servers):
        raise ValueError(f"node id {node_id} is not in 1..{len(servers)}")
    me = servers[node_id - 1]
    lines = [
        f"tickTime={settings.tick_time_ms}",
        f"initLimit={settings.init_limit_ticks}",
        f"syncLimit={settings.sync_limit_ticks}",
        f"minSessionTimeout={settings.min_session_timeout_ms}",
        f"maxSessionTimeout={settings.max_session_timeout_ms}",
        f"dataDir={data_dir}",
        f"clientPortAddress={me.host}",
        f"clientPort={me.client_port}",
        # The admin server is an HTTP server on a fixed port (8080) by default.
        "admin.enableServer=false",
        f"4lw.commands.whitelist={','.join(settings.four_letter_words)}",
        # Membership is what this file says; no dynamic reconfiguration.
        "reconfigEnabled=false",
    ]
    if len(servers) > 1:
        lines += [
            f"server.{i}={s.host}:{s.peer_port}:{s.election_port}"
            for i, s in enumerate(servers, start=1)
        ]
    return "\n".join(lines) + "\n"
