"""Executing a fault schedule against a Target, recording every fault.

Each fault is an `invoke` by process `nemesis` (its targets in `detail`), then `ok` with
what was done (the targets, and for partitions the grudge) or `info` when the fault could
not be completed (a node that did not answer): the history's nemesis ops. The runner
reaches the system only through the Target: process control of its nodes, its network
control where it has one, and its brokers' admin API to find who owns what. What each
fault does is its unit's business (`nemesis.faults`).
"""

from __future__ import annotations

import functools
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from harness.admin_api import AdminError, admin_request
from harness.health_probe import read_health
from harness.target import Target, broker_at
from history.writer import HistoryWriter
from nemesis.events import NemesisEvent
from nemesis.faults.base import CONTROLLER_LEADER, OWNER, FaultContext
from nemesis.partition import Partitioner
from nemesis.process import ProcessFaults
from nemesis.schedule import FaultStep, Schedule

log = logging.getLogger(__name__)

PROCESS = "nemesis"
HTTP_TIMEOUT = 3.0
SETTLE_MARGIN_S = 10.0
"""How long past a broker's promised give-up time (else its session timeout) the final heal
waits for every broker to answer healthy (`NemesisRunner._settle`)."""
SETTLE_POLL_S = 1.0
RESTART_GRACE_S = 10.0
"""How long a broker the settling started is given to answer before it is started again."""
AFTERMATH_S = 15.0
"""How long a fault's effects may outlast it (`FaultStatus.disturbed_since`): a session
timeout (at most 10 s in the drawn topologies) and the clients' first reconnections."""


@dataclass
class FaultStatus:
    """What is broken right now, for the progress display."""

    active: dict[Hashable, tuple[str, str]] = field(default_factory=dict)
    """What the caller knows each fault on now by (its schedule step) -> the fault's name
    and targets, while it lasts. Keyed by the step, not the name: two kills overlapping
    (a quick one inside a long one) are two faults, and the first to end leaves the other
    on."""
    injected: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_change: float = -math.inf
    """When (a `time.monotonic()`) a fault last began or ended."""

    def begin(self, key: Hashable, fault: str, targets: str) -> None:
        with self.lock:
            self.active[key] = (fault, targets)
            self.injected += 1
            self.last_change = time.monotonic()

    def end(self, key: Hashable) -> None:
        with self.lock:
            self.active.pop(key, None)
            self.last_change = time.monotonic()

    def clear(self) -> None:
        with self.lock:
            self.active.clear()
            self.last_change = time.monotonic()

    def disturbed_since(self, since: float) -> bool:
        """A fault on now, or one begun or ended from `AFTERMATH_S` before `since` on:
        after a fault the clients reconnect with back-off, topics move to other owners
        and sessions are taken up again, which takes seconds."""
        with self.lock:
            return bool(self.active) or self.last_change >= since - AFTERMATH_S

    def text(self) -> str:
        with self.lock:
            return ", ".join(f"{f} {t}" for f, t in self.active.values()) or "none"


class NemesisRunner:
    """Runs `schedule` against `target`, recording into `history`. `topic` is the
    workload's topic, whose owner the `owner` target means."""

    def __init__(self, schedule: Schedule, target: Target, history: HistoryWriter,
                 topic: str, status: FaultStatus | None = None) -> None:
        self.schedule = schedule
        self._target = target
        self._history = history
        network = target.network
        self._context = FaultContext(target, ProcessFaults(),
                                     Partitioner(network) if network is not None else None,
                                     topic)
        self.status = status or FaultStatus()
        self._begun: dict[FaultStep, tuple[str, ...]] = {}
        self._sessions_at_risk = False
        """Whether a fault that can end a broker's metadata session was injected."""

    def run(self, started: float, stop: threading.Event) -> None:
        """Execute every action at its offset from `started` (a `time.monotonic()`),
        ending with the final heal. `stop` cuts the waiting short, and Ctrl-C cuts the
        run short: the heal still runs, so a Target starquake did not start is left whole."""
        try:
            for action in self.schedule.actions():
                if stop.wait(max(0.0, started + action.at_s - time.monotonic())):
                    break
                if action.step is None:  # the final heal's time has come
                    break
                (self._begin if action.kind == "begin" else self._end)(action.step)
        finally:
            self.heal()

    def _begin(self, step: FaultStep) -> None:
        rng = random.Random(step.shape_seed)
        beneath = [begun for begun in self._begun if begun.beneath]
        if any(step.would_relink(background) for background in beneath):
            return  # its end would put back the link the background holds
        held = {node for background in beneath if not background.kind.cluster_targets
                for node in self._begun[background]}
        # `owner` may name a node the step names too: each node is struck once.
        targets = tuple(dict.fromkeys(self._resolve(t, rng) for t in step.targets))
        if not step.kind.cluster_targets:
            targets = self._around(held, targets, rng)
        if step.targets and not targets:
            return  # every node it could strike is held by the background
        self._begun[step] = targets
        self.status.begin(step, step.fault, ",".join(targets) or "cluster")
        fault = step.kind
        self._sessions_at_risk = self._sessions_at_risk or not fault.keeps_sessions
        self._record(fault.op, targets, lambda: fault.inject(self._context, targets, rng))
        if fault.instant:
            self.status.end(step)

    def _end(self, step: FaultStep) -> None:
        if step not in self._begun:
            return  # it never began (`_begin`)
        targets = self._begun.pop(step)
        self.status.end(step)
        fault = step.kind
        if fault.end_op is not None:
            self._record(fault.end_op, targets, lambda: fault.end(self._context, targets))

    def heal(self) -> None:
        """Heal everything: the network first, then resume paused nodes and start killed
        ones, then, after a fault that can end a broker's session, every broker. Each kind
        of repair is its own operation, so the statistics can close the fault it ends; a
        `heal` is always recorded, marking the end of the fault phase. Faults those
        repairs do not undo are ended first, each as its own end."""
        for step in [s for s in self._begun if s.kind.outlives_heal]:
            self._end(step)
        self.status.clear()
        self._begun.clear()
        partitioner = self._context.partitioner
        self._record("heal", (), partitioner.heal if partitioner is not None
                     else lambda: NemesisEvent("heal", "heal", ()))
        processes = self._context.processes
        paused, killed = processes.paused, processes.killed
        if paused:
            self._record("resume", paused,
                         lambda: processes.resume(self._context.nodes(paused)))
        if killed:
            self._record("start", killed, lambda: processes.start(self._context.nodes(killed)))
        halted = self._brokers_that_may_have_halted(killed)
        if halted:
            self._record("start", halted, lambda: processes.start(self._context.nodes(halted)))
            self._settle(halted)

    def _settle(self, brokers: Sequence[str]) -> None:
        """Start again, as a supervisor would, each of `brokers` that halts after the
        final heal, until every one answers its health check healthy or for as long as a
        broker may try before it gives up (plus `SETTLE_MARGIN_S`). A broker still shutting
        down when the heal starts every broker is running, so the start leaves it alone,
        and it halts a moment later; one that learns on reconnecting that its session
        ended halts after the heal. Either would leave the drain without a broker: a drawn
        run (explore's topic seed 10 on docker, every broker cut from ZooKeeper under
        `shutdown`) ended `unknown` so, its brokers exiting a second after the heal."""
        urls = {node: url for cluster in self._target.clusters
                for node, url in cluster.broker_admin_urls.items() if node in brokers}
        given = self._target.metadata_loss_shutdown_s or self._target.session_timeout_s
        deadline = time.monotonic() + given + SETTLE_MARGIN_S
        started = dict.fromkeys(brokers, time.monotonic())  # the heal's own start
        while time.monotonic() < deadline:
            readings = {node: read_health(url) for node, url in urls.items()}
            if all(_up(reading) for reading in readings.values()):
                return
            now = time.monotonic()
            gone = [node for node, reading in readings.items() if _silent(reading)
                    and now - started[node] > RESTART_GRACE_S]
            if gone:
                started.update(dict.fromkeys(gone, now))
                self._record("start", gone, functools.partial(
                    self._context.processes.start, self._context.nodes(gone)))
            time.sleep(SETTLE_POLL_S)

    def _brokers_that_may_have_halted(self, killed: Sequence[str]) -> tuple[str, ...]:
        """A broker whose metadata session ended shuts down under PIP-57's `shutdown`
        policy (and under `reconnect` once its attempts are spent), and nothing in a run
        starts it again. After a fault that can end a session, the final heal starts every
        broker it can start (one still running is left alone), as an operator's supervisor
        would, so that the drain judges a whole cluster rather than none."""
        if not self._sessions_at_risk:
            return ()
        return tuple(node.name for cluster in self._target.clusters for node in cluster.nodes
                     if node.role == "broker" and "kill" in node.capabilities
                     and node.name not in killed)

    def _record(self, f: str, targets: Sequence[str],
                act: Callable[[], NemesisEvent | None]) -> None:
        self._history.record(PROCESS, "invoke", f, value=",".join(targets) or f,
                             detail={"targets": list(targets)})
        try:
            event = act() or NemesisEvent(f, ",".join(targets) or f, tuple(targets))
        except Exception as exc:  # a fault that failed half-way may or may not have acted
            log.warning("nemesis %s on %s failed: %s", f, ",".join(targets), exc)
            self._history.record(PROCESS, "info", f, value=",".join(targets) or f,
                                 error=type(exc).__name__,
                                 detail={"targets": list(targets), "message": str(exc)})
            return
        self._history.record(PROCESS, "ok", f, **event.history_fields())

    def _around(self, held: set[str], targets: tuple[str, ...], rng: random.Random
                ) -> tuple[str, ...]:
        """`targets` with each node the background fault holds (`held`) replaced by
        another of its cluster and role, drawn from the step's seed, or left out where
        there is none: this step's repair (a start, a resume) would otherwise end the
        background early. Here, not in the schedule, since only here is a node known
        that is found at run time: the `owner` the lookup still names while the killed
        owner's session lasts, or the node the background's own `owner` turned out to
        be."""
        kept: list[str] = []
        for target in targets:
            if target not in held:
                kept.append(target)
                continue
            cluster, node = next((c, n) for c in self._target.clusters for n in c.nodes
                                 if n.name == target)
            others = [n.name for n in cluster.of_role(node.role)
                      if n.name not in held and n.name not in targets and n.name not in kept]
            if others:
                kept.append(rng.choice(others))
        return tuple(kept)

    def _resolve(self, target: str, rng: random.Random) -> str:
        """`owner` -> the broker owning the topic now; `controller-leader` -> the broker
        leading the scalable topic's controller now; each asked of any broker that
        answers. When none does, a broker drawn from the step's seed."""
        name = self._context.topic.split("://", 1)[-1]
        keys: tuple[str, ...]
        if target == OWNER:
            path, keys = f"/lookup/v2/topic/persistent/{name}", ("nativeUrl", "brokerUrl")
        elif target == CONTROLLER_LEADER:
            path, keys = f"/admin/v2/scalable/{name}/stats", ("controllerBrokerUrl",)
        else:
            return target
        admin_urls = self._target.clusters[0].broker_admin_urls
        brokers = sorted(admin_urls)
        for broker in brokers:
            try:
                found = admin_request(admin_urls[broker], "GET", path, timeout=HTTP_TIMEOUT)
            except (OSError, AdminError):
                continue
            for key in keys:
                node = broker_at(self._target, str(found.get(key, "")) if isinstance(found, dict)
                                 else "")
                if node is not None:
                    return node
        fallback = rng.choice(brokers)
        log.warning("no broker named the %s of %s; using %s", target, self._context.topic, fallback)
        return fallback


def _up(reading: dict[str, object]) -> bool:
    """A health reading of a broker that is up and no longer needs waiting for: healthy,
    or answering in a way that says nothing of health (a 4xx: the probe's credentials)."""
    return reading["answer"] == "healthy" or (reading["answer"] == "unknown"
                                              and "status" in reading)


def _silent(reading: dict[str, object]) -> bool:
    """A health reading of a broker that may have halted: nothing listening, or no answer
    at all (a stopped container's address leads nowhere)."""
    return reading["answer"] == "down" or (reading["answer"] == "unknown"
                                           and "status" not in reading)
