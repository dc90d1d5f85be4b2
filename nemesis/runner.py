"""Executing a fault schedule against a running cluster, recording every fault.

Each fault is an `invoke` by process `nemesis` (its targets in `detail`), then `ok` with
what was done (the targets, and for partitions the grudge) or `info` when the fault could
not be completed (a node that did not answer): the history catalogue's nemesis ops. The
runner reaches the cluster only through `FaultTargets`, which both backends provide:
process control of named nodes, a `Partitioner` where the network can be cut, the brokers'
admin URLs and the ZooKeeper ensemble.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from history.writer import HistoryWriter
from nemesis.events import NemesisEvent
from nemesis.partition import Partitioner
from nemesis.process import ProcessFaults, ProcessNode
from nemesis.schedule import CONTROLLER_LEADER, OWNER, WAN_FAULTS, FaultStep, Schedule
from nemesis.session_expiry import expire_session

log = logging.getLogger(__name__)

PROCESS = "nemesis"
SESSION_PATH = "/admin/v2/debug/zookeeper-session"
HTTP_TIMEOUT = 3.0

_ENDS = {"kill": "start", "pause": "resume", "kill-controller-leader": "start"}


class FaultTargets(Protocol):
    """What the nemesis needs of a cluster backend."""

    def process_node(self, name: str) -> ProcessNode: ...

    @property
    def partitioner(self) -> Partitioner | None:
        """None where nodes cannot be partitioned (local processes)."""

    @property
    def broker_admin_urls(self) -> dict[str, str]:
        """Broker node name -> its admin URL, as the harness reaches it."""

    def broker_at(self, url: str) -> str | None:
        """The broker node name whose service or admin URL is `url`."""

    @property
    def zookeeper_hosts(self) -> str:
        """The ensemble's `host:port,...`, without chroot."""


@dataclass
class FaultStatus:
    """What is broken right now, for the progress display."""

    active: dict[str, str] = field(default_factory=dict)
    """Fault name -> its targets, while it lasts."""
    injected: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def begin(self, fault: str, targets: str) -> None:
        with self.lock:
            self.active[fault] = targets
            self.injected += 1

    def end(self, fault: str) -> None:
        with self.lock:
            self.active.pop(fault, None)

    def clear(self) -> None:
        with self.lock:
            self.active.clear()

    def text(self) -> str:
        with self.lock:
            return ", ".join(f"{f} {t}" for f, t in self.active.items()) or "none"


class NemesisRunner:
    """Runs `schedule` against `targets`, recording into `history`. `topic` is the
    workload's topic, whose owner the `owner` target means."""

    def __init__(self, schedule: Schedule, targets: FaultTargets, history: HistoryWriter,
                 topic: str, status: FaultStatus | None = None) -> None:
        self.schedule = schedule
        self._targets = targets
        self._history = history
        self._topic = topic
        self._processes = ProcessFaults()
        self.status = status or FaultStatus()
        self._begun: dict[FaultStep, tuple[str, ...]] = {}

    def run(self, started: float, stop: threading.Event) -> None:
        """Execute every action at its offset from `started` (a `time.monotonic()`),
        ending with the final heal. `stop` cuts the waiting short: the heal still runs."""
        for action in self.schedule.actions():
            if stop.wait(max(0.0, started + action.at_s - time.monotonic())):
                break
            if action.step is None:  # the final heal's time has come
                break
            (self._begin if action.kind == "begin" else self._end)(action.step)
        self.heal()

    # --- faults --------------------------------------------------------------------------

    def _begin(self, step: FaultStep) -> None:
        rng = random.Random(step.shape_seed)
        targets = tuple(self._resolve(t, rng) for t in step.targets)
        self._begun[step] = targets
        self.status.begin(step.fault, ",".join(targets) or "cluster")
        partitioner = self._targets.partitioner
        if step.fault in ("kill", "kill-controller-leader"):
            # history.md names the controller leader's kill `kill-leader`
            self._record("kill" if step.fault == "kill" else "kill-leader", targets,
                         lambda: self._processes.kill(self._nodes(targets)))
        elif step.fault == "pause":
            self._record("pause", targets, lambda: self._processes.pause(self._nodes(targets)))
        elif step.fault == "expire-session":
            self._record("expire-session", targets, lambda: self._expire(targets))
            self.status.end(step.fault)
        elif step.fault in WAN_FAULTS and partitioner is not None:
            self._record("cut-wan", targets, lambda: _cut_wan(partitioner))
        elif partitioner is not None:
            self._record("partition", targets, lambda: self._partition(partitioner, step, rng,
                                                                        targets))
        else:  # the schedule refuses such scenarios; this guards direct callers
            raise ValueError(f"{step.fault} needs a backend that can partition")

    def _end(self, step: FaultStep) -> None:
        targets = self._begun.pop(step, ())
        self.status.end(step.fault)
        if step.fault in _ENDS:
            op = _ENDS[step.fault]
            control = self._processes.start if op == "start" else self._processes.resume
            self._record(op, targets, lambda: control(self._nodes(targets)))
        elif self._targets.partitioner is not None:
            partitioner = self._targets.partitioner
            self._record("heal-wan" if step.fault in WAN_FAULTS else "heal", targets,
                         partitioner.heal)

    def heal(self) -> None:
        """Heal everything: the network first, then resume paused nodes and start killed
        ones. Each kind of repair is its own operation, so the statistics can close the
        fault it ends; a `heal` is always recorded, marking the end of the fault phase."""
        self.status.clear()
        partitioner = self._targets.partitioner
        self._record("heal", (), partitioner.heal if partitioner is not None
                     else lambda: NemesisEvent("heal", "heal", ()))
        down: dict[str, list[str]] = {"resume": [], "start": []}
        for step, targets in self._begun.items():
            if step.fault in _ENDS:
                down[_ENDS[step.fault]] += targets
        self._begun.clear()
        for op, names in down.items():
            if names:
                unique = tuple(dict.fromkeys(names))
                control = self._processes.resume if op == "resume" else self._processes.start
                self._record(op, unique, lambda: control(self._nodes(unique)))

    def _record(self, f: str, targets: Sequence[str], act: Callable[[], NemesisEvent]) -> None:
        self._history.record(PROCESS, "invoke", f, value=",".join(targets) or f,
                             detail={"targets": list(targets)})
        try:
            event = act()
        except Exception as exc:  # a fault that failed half-way may or may not have acted
            log.warning("nemesis %s on %s failed: %s", f, ",".join(targets), exc)
            self._history.record(PROCESS, "info", f, value=",".join(targets) or f,
                                 error=type(exc).__name__,
                                 detail={"targets": list(targets), "message": str(exc)})
            return
        self._history.record(PROCESS, "ok", f, **event.history_fields())

    def _nodes(self, names: Sequence[str]) -> list[ProcessNode]:
        return [self._targets.process_node(name) for name in names]

    def _partition(self, partitioner: Partitioner, step: FaultStep, rng: random.Random,
                   targets: tuple[str, ...]) -> NemesisEvent:
        if step.fault in ("isolate", "isolate-controller-leader"):
            return partitioner.isolate(targets[0])
        if step.fault == "brokers-from-zookeeper":
            names = partitioner.names
            return partitioner.brokers_from_zookeeper(
                [n for n in names if "-broker" in n], [n for n in names if "-zk" in n])
        shape = {"random-halves": partitioner.random_halves, "bridge": partitioner.bridge,
                 "majorities-ring": partitioner.majorities_ring}[step.fault]
        return shape(rng)

    def _expire(self, targets: Sequence[str]) -> NemesisEvent:
        """Expire each target broker's ZooKeeper session, read from its debug endpoint."""
        expired = {}
        for name in targets:
            session = _get_json(self._targets.broker_admin_urls[name] + SESSION_PATH)
            took = expire_session(self._targets.zookeeper_hosts, int(session["sessionId"]),
                                  bytes.fromhex(session["password"]))
            expired[name] = session.get("sessionIdHex") if took else "already expired"
        return NemesisEvent("expire-session", ",".join(targets), tuple(targets),
                            {"sessions": expired})

    def _resolve(self, target: str, rng: random.Random) -> str:
        """`owner` -> the broker owning the topic now; `controller-leader` -> the broker
        leading the scalable topic's controller now; each asked of any broker that
        answers. When none does, a broker drawn from the step's seed."""
        name = self._topic.split("://", 1)[-1]
        if target == OWNER:
            path, keys = f"/lookup/v2/topic/persistent/{name}", ("nativeUrl", "brokerUrl")
        elif target == CONTROLLER_LEADER:
            path, keys = f"/admin/v2/scalable/{name}/stats", ("controllerBrokerUrl",)
        else:
            return target
        brokers = sorted(self._targets.broker_admin_urls)
        for broker in brokers:
            try:
                found = _get_json(self._targets.broker_admin_urls[broker] + path)
            except OSError:
                continue
            for key in keys:
                node = self._targets.broker_at(str(found.get(key, "")))
                if node is not None:
                    return node
        fallback = rng.choice(brokers)
        log.warning("no broker named the %s of %s; using %s", target, self._topic, fallback)
        return fallback


def _cut_wan(partitioner: Partitioner) -> NemesisEvent:
    """The first cluster's nodes from every other cluster's (node names begin with their
    cluster's name)."""
    first = partitioner.names[0].rsplit("-", 1)[0]
    mine = [n for n in partitioner.names if n.rsplit("-", 1)[0] == first]
    return partitioner.cut_wan(mine, [n for n in partitioner.names if n not in mine])


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT) as response:
        return json.loads(response.read())
