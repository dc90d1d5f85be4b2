"""The registry of fault kinds: every part of starquake that names a fault takes it from
here (the scenario format, the schedule, the runner). See `nemesis.faults.base`."""

from __future__ import annotations

from nemesis.faults.base import Fault
from nemesis.faults.controller import IsolateControllerLeader, KillControllerLeader
from nemesis.faults.partitions import (
    Bridge,
    BrokerFromZooKeeper,
    BrokersFromZooKeeper,
    CutClients,
    Isolate,
    MajoritiesRing,
    RandomHalves,
)
from nemesis.faults.process import Kill, Pause
from nemesis.faults.replication import UnlinkReplication
from nemesis.faults.session import ExpireSession
from nemesis.faults.wan import CutWan

FAULTS: dict[str, Fault] = {fault.name: fault for fault in (
    Isolate(), RandomHalves(), Bridge(), MajoritiesRing(), BrokersFromZooKeeper(),
    BrokerFromZooKeeper(),
    IsolateControllerLeader(), CutWan(), CutClients(), Kill(), Pause(), ExpireSession(),
    KillControllerLeader(), UnlinkReplication(),
)}

FAULT_NAMES = tuple(FAULTS)
