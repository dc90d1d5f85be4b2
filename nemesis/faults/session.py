"""`expire-session`: a broker loses its metadata-store session (PIP-57).

Done with what the Target offers, in this order of preference:
- `session-debug` (our brokers): read the broker's session id and password from its debug
  endpoint and expire the session on the store at once, as ZooKeeper's own tests do;
- `partition`: cut the broker from the metadata store's nodes for longer than the session
  timeout, then heal: the store expires the session itself;
- `pause`: freeze the broker for longer than the session timeout, then resume.
Either way the fault is over when the injection returns, and it is recorded as one
`expire-session` operation saying how it was done.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

from harness.admin_api import admin_request
from harness.target import SESSION_DEBUG_PATH, TargetCluster
from nemesis.events import NemesisEvent
from nemesis.faults.base import OWNER, Fault, FaultContext, FaultPlanError, Surface
from nemesis.session_expiry import expire_session

OUTLAST = 1.5
"""How many session timeouts a cut or a pause lasts, so the store has surely expired the
session (ZooKeeper checks sessions on a tick of a fraction of the timeout)."""


class ExpireSession(Fault):
    name = "expire-session"
    op = "expire-session"
    defaults = (OWNER, "broker")
    strikes_several = True

    def check_targets(self, surface: Surface, key: str, targets: Sequence[str]) -> None:
        brokers = surface.broker_aims()
        if any(t not in brokers for t in targets):
            raise FaultPlanError(f"{key}: {self.name} acts on brokers (their metadata "
                                 f"session), got {list(targets)}")

    def check(self, surface: Surface, key: str) -> None:
        if not any(surface.anyone_can(c, "broker") for c in ("session-debug", "partition",
                                                                "pause")):
            raise FaultPlanError(f"{key}: {self.name} needs brokers whose session can be "
                                 f"read (session-debug), cut (partition) or paused (pause)")

    def inject(self, ctx: FaultContext, targets: tuple[str, ...],
               rng: random.Random) -> NemesisEvent:
        how = {name: self._expire(ctx, name) for name in targets}
        return NemesisEvent(self.op, ",".join(targets), tuple(targets), {"sessions": how})

    def _expire(self, ctx: FaultContext, broker: str) -> str:
        node = next(n for c in ctx.target.clusters for n in c.nodes if n.name == broker)
        cluster = next(c for c in ctx.target.clusters if node in c.nodes)
        if "session-debug" in node.capabilities and cluster.metadata_store:
            return _expire_through_debug(cluster, broker)
        timeout = ctx.target.session_timeout_s * OUTLAST
        store = [n.name for n in cluster.of_role("zookeeper")]
        if "partition" in node.capabilities and ctx.partitioner is not None and store:
            ctx.partitioner.partition({broker: store, **{z: [broker] for z in store}},
                                      "brokers-from-zookeeper", targets=(broker,))
            time.sleep(timeout)
            ctx.partitioner.heal()
            return f"cut from the metadata store for {timeout:g} s"
        ctx.processes.pause(ctx.nodes([broker]))
        time.sleep(timeout)
        ctx.processes.resume(ctx.nodes([broker]))
        return f"paused for {timeout:g} s"


def _expire_through_debug(cluster: TargetCluster, broker: str) -> str:
    assert cluster.metadata_store is not None
    session = admin_request(cluster.broker_admin_urls[broker], "GET", SESSION_DEBUG_PATH,
                            timeout=3.0)
    took = expire_session(cluster.metadata_store, int(session["sessionId"]),
                          bytes.fromhex(session["password"]))
    return str(session.get("sessionIdHex")) if took else "already expired"


