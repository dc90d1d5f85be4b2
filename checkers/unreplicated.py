"""What `lost` does not owe: messages an unlinked cluster never replicated.

An operator who drops cluster Y from cluster X's replication clusters (the nemesis's
`unlink-replication`, Pulsar's `POST .../replication`) removes X's replicator to Y and
its cursor; the replicator added again when Y is put back starts at the topic's end. What
X wrote meanwhile, and what the replicator still held when it was removed, never reaches
Y, by design. A subscription consumed in Y (one of Y alone, or a replicated subscription
whose copy in Y moves with the others) is therefore not owed a message X wrote then that
no subscription in Y ever received: `lost` counts such (subscription, value) pairs here,
as `unreplicated`, and not as anomalies.

The window runs from `EDGE_MS` before the unlink's invoke (the replicator's backlog,
which the removal drops; further back through any fault on at that moment or ended just
before it, during which the backlog may have grown) to `EDGE_MS` after the completion of
what ended it (`relink-replication`, or a `heal`: the brokers start the new replicator
when they learn of the changed policy, a moment after the admin call returns), or to the
end of the history. A message of X that reached Y through any subscription was
replicated, so its absence from another subscription in Y is still `lost`; so is
anything X wrote outside a window, and anything Y's own producers wrote.
"""

from __future__ import annotations

import pyarrow as pa

from checkers.frames import HistoryFrames, SmallFact, ending_op
from history.faults import HEAL_OPS
from history.schema import detail_object

UNREPLICATED = "unreplicated"
"""The rows of (subscription, value) pairs `lost` does not owe (counted in the statistics)."""
UNLINK = "unlink-replication"
EDGE_MS = 5_000
"""How long before an unlink a message may have been written and still sit in the
replicator it removes (a replicator keeps up within milliseconds on a quiet link; a few
seconds covers one catching up after a broker's restart), and how long after the relink
returned one may be written before the new replicator's cursor exists."""
WINDOWS = pa.schema([("run", pa.string()), ("topic", pa.string()),
                     ("subscription", pa.string()), ("cluster", pa.string()),
                     ("receiver", pa.string()), ("start", pa.int64()), ("until", pa.int64())])
"""One unlink's window for one subscription consumed in its receiving cluster: `cluster`
is the sender, whose writes from `start` to `until` (nanoseconds) the receiver may lack."""
_MS = 1_000_000
_NEVER = 2 ** 63 - 1


def unreplicated_windows(frames: HistoryFrames) -> pa.Table:
    """Every unlink's window (`WINDOWS`), once per subscription consumed in its receiver."""
    found: list[dict[str, object]] = []
    for n, op in enumerate(frames.nemesis):
        if op.f != UNLINK or op.outcome == "fail":
            continue
        ended = ending_op(frames.nemesis, n)
        receiver = _receiver(op, ended)
        if receiver is None:
            continue
        start = backlog_start(frames, op)
        until = _NEVER if ended is None else (ended.done_time or ended.time) + EDGE_MS * _MS
        for sender in _senders(op):
            found += [{"run": run, "topic": topic, "subscription": subscription,
                       "cluster": sender, "receiver": receiver, "start": start, "until": until}
                      for run, topic, subscription, cluster in sorted(frames.subscribed_in,
                                                                       key=str)
                      if run == op.run and cluster == receiver]
    return pa.Table.from_pylist(found, schema=WINDOWS)


def backlog_start(frames: HistoryFrames, unlink: SmallFact) -> int:
    """From when what the unlink's replicator still held may have been written: `EDGE_MS`
    before the unlink, and further back through every fault of the run that was on then
    or ended within `EDGE_MS` before (a receiver down, a link cut: the replicator falls
    behind, and catches up only after it reconnects), each again with `EDGE_MS`."""
    start = unlink.time - EDGE_MS * _MS
    spans = [(op.time, _ended_at(ending_op(frames.nemesis, n)))
             for n, op in enumerate(frames.nemesis)
             if op.run == unlink.run and op.f not in HEAL_OPS and op.time < unlink.time]
    moved = True
    while moved:
        earlier = [begun - EDGE_MS * _MS for begun, ended in spans
                   if begun < start <= ended + EDGE_MS * _MS]
        moved = bool(earlier) and min(earlier) < start
        start = min([start, *earlier])
    return start


def _ended_at(ended: SmallFact | None) -> int:
    """When a fault was over: the completion of what ended it, the end of time when
    nothing did."""
    return _NEVER if ended is None else ended.done_time or ended.time


def _receiver(op: SmallFact, ended: SmallFact | None) -> str | None:
    """The cluster the senders stopped replicating to: as the unlink's completion names
    it, else (a history written before it did) the one the relink put back in a sender's
    list; None when neither says (no excuse then)."""
    named = detail_object(op.done_detail).get("receiver")
    if isinstance(named, str):
        return named
    before, after = _lists(op), {} if ended is None else _lists(ended)
    added = {cluster for sender, listed in after.items()
             for cluster in set(listed) - set(before.get(sender, []))}
    return added.pop() if len(added) == 1 else None


def _senders(op: SmallFact) -> list[str]:
    """The clusters whose replication lists the unlink rewrote."""
    return sorted(_lists(op))


def _lists(op: SmallFact) -> dict[str, list[str]]:
    """Each sender's replication clusters as the operation wrote them."""
    lists = detail_object(op.done_detail).get("replication_clusters")
    return lists if isinstance(lists, dict) else {}
