"""What each value's events prove: the first of the two passes behind `checkers.delivery`.

One shuffle by value brings every send, delivery and acknowledgement of a value into one
partition, and a Python worker decides each partition as a whole with Arrow's joins and
aggregates (`checkers.partitions`): the anomalies of `lost`, `unexpected`,
`failed-delivered`, `duplicate`, `multi-position` and `ack-unapplied`; each partition's
share of every failover's redeliveries (what `duplicate-window` measures, merged by
`checkers.failover_windows`); and each keyed message's first delivery in each ordered
subscription (what `order` compares). They come out in one table, told apart by `kind`,
which the same worker cuts by key for the second pass; the findings are few and ride
along.

Joins here, as in SQL, never match a null key: a delivery with no topic or subscription
proves nothing delivered, and a value that is null is never shown delivered.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from checkers.coverage import Frontiers, covered, frontiers, load_frontiers
from checkers.failover_windows import FAILOVER_SHARE, failover_shares, judged_failover_table
from checkers.frames import ACK_SCOPE, CursorScope, HistoryFrames
from checkers.partitions import (
    CODED_TEXT,
    Scan,
    TextCodes,
    columns,
    decide_and_scatter,
    gather,
    rows,
    scatter_scans,
    several_values,
)
from checkers.unreplicated import UNREPLICATED, unreplicated_windows
from checkers.views import ACK_INVOKES, ACKS, OBSERVATIONS_FILE, RECVS, SENDS
from history.cursor import CursorReading, parse_position
from history.schema import ORDERED_MODES

FINDINGS = pa.schema([
    ("run", pa.string()), ("checker", pa.string()), ("value", pa.string()),
    ("topic", pa.string()), ("subscription", pa.string()), ("cluster", pa.string()),
    ("key", pa.string()),
    # `at` is the finding's own event (its sort key), `proof*` the others that prove it.
    ("at", pa.int64()), ("proof0", pa.int64()), ("proof1", pa.int64()),
    ("proof2", pa.int64()),
    # `order`'s: the first out-of-order pair, and how many pairs the key has.
    ("earlier", pa.string()), ("later", pa.string()), ("pairs", pa.int64()),
    # `multi-position`'s and `ack-unapplied`'s: the positions concerned.
    ("positions", pa.list_(pa.string())),
    # A failover's redeliveries (`checkers.failover_windows`): the earliest ack's time.
    ("ack_time", pa.int64())])
"""An anomaly, as both passes give them."""
FIRSTS = ["inv_index", "ok_index", "first_recv"]
"""A keyed send (its `key`, `value`, `topic`), and its first delivery in `subscription`."""
KEY = ["run", "topic", "subscription", "cluster", "key"]
"""Where `order` compares deliveries (a subscription in one cluster, as the spec's S): the
output is partitioned by these."""
FINDING, FIRST = "finding", "first"
"""`kind` of an output row: an anomaly, or a first delivery."""

PRODUCER_RETRY = "producer-retry"
"""Rows of a value stored twice where that is legal (`multi-position`): counted in the
statistics, not an anomaly."""

_SEND, _RECV, _ACK, _UNCONFIRMED = 0, 1, 2, 3
_REPEATING = ("run", "f", "type", "done_type", "topic", "subscription", "cluster")
"""The columns read as dictionaries (`Scan.read`): those the views filter on, and those
that place a row; they repeat on most rows, so the pass shuffles them coded."""
_BY_VALUE = pa.schema([
    ("run", CODED_TEXT), ("value", pa.string()), ("kind", pa.int32()),
    ("topic", CODED_TEXT), ("subscription", CODED_TEXT), ("cluster", CODED_TEXT),
    ("key", pa.string()), ("index", pa.int64()), ("done_index", pa.int64()),
    ("outcome", pa.string()), ("position", pa.string()), ("time", pa.int64()),
    ("segment", pa.int64())])
"""What the pass shuffles: a send, a delivery, an ack completed `ok` or one that was not
(`kind`) of a value; `position` where it was written, delivered or acknowledged; `time`
a send's or an ack's completion's; `segment` a delivery's (-1 without segments)."""
_OUTPUT = pa.schema([("kind", pa.string()), *FINDINGS,
                     *(pa.field(name, pa.int64()) for name in FIRSTS)])
_PLACE = ["run", "value", "topic", "subscription"]
_TEXT_KEYS = [*_PLACE, "cluster", "key", "position"]


def per_value(frames: HistoryFrames) -> DataFrame:
    """The pass's output (see the module), gathered by key (`KEY`) for `order`'s pass."""
    subscriptions = frames.subscription_table()
    ordered = frames.subscription_table(ORDERED_MODES).select(["run", "topic", "subscription"])
    facts = _Facts(frames.deduplicating_runs, frames.final_cursors(),
                   judged_failover_table(frames), frontiers(frames),
                   unreplicated_windows(frames))
    scattered = scatter_scans(frames.spark, frames.scans(), _by_value, "value",
                              frames.partitions)
    by_value = gather([scattered], frames.partitions)
    decided = decide_and_scatter(
        by_value, lambda events: _decide(events, subscriptions, ordered, facts), "key",
        frames.partitions)
    return gather([decided], frames.partitions)


@dataclass(frozen=True)
class _Facts:
    """What the driver knows that some rules need: the runs that deduplicate, each
    subscription's last cursor reading after the drain (`ack-unapplied`), the failovers
    `duplicate-window` judges, and the windows in which a cluster's writes may not reach
    another (`lost`, `checkers.unreplicated`)."""

    deduplicating: set[str]
    final_cursors: dict[CursorScope, tuple[int, CursorReading]]
    failovers: pa.Table
    frontiers: tuple[str, ...]
    """Where cumulative acks reached (`checkers.coverage`): the files the tasks read them
    from, none when the history has no cumulative ack."""
    unreplicated: pa.Table

    def runs(self) -> pa.Table:
        return pa.table({"run": pa.array(sorted(self.deduplicating), pa.string())})

    def idle_scopes(self) -> pa.Table:
        """Subscriptions whose final reading shows consumers connected with nothing out
        at them: there, a message neither acknowledged nor delivered again is stuck. A
        reading with no mark-delete position (a scalable topic's, which spans a cursor per
        segment) can show no message acknowledged, so it judges nothing."""
        idle = [scope for scope, (_, reading) in self.final_cursors.items()
                if reading.consumers > 0 and reading.unacked == 0
                and reading.mark_delete is not None]
        return pa.table([pa.array([scope[n] for scope in idle], pa.string())
                         for n in range(len(ACK_SCOPE))], names=ACK_SCOPE)


def _decide(events: pa.Table, subscriptions: pa.Table, ordered: pa.Table,
            facts: _Facts) -> pa.Table:
    """Everything one partition's values prove."""
    if facts.frontiers:
        events = pa.concat_tables([events, _covered(events, load_frontiers(facts.frontiers))])
    codes = TextCodes(events, _TEXT_KEYS)
    coded = codes.table

    def of(kind: int) -> pa.Table:
        return coded.filter(pc.equal(coded["kind"], kind))

    sends, recvs, acks, unconfirmed = of(_SEND), of(_RECV), of(_ACK), of(_UNCONFIRMED)
    known = recvs.filter(pc.is_valid(recvs["value"]))
    deduplicating = codes.encode(facts.runs())["run"].combine_chunks()
    schema = codes.coded(_OUTPUT)
    found = pa.concat_tables([
        _lost(schema, sends, known, codes.encode(subscriptions),
              _coded_windows(facts.unreplicated, codes)),
        _unexpected(schema, sends, recvs), _failed_delivered(schema, sends, known),
        _duplicate(schema, known, acks, deduplicating),
        _multi_position(schema, sends, known, deduplicating, codes),
        _unapplied(schema, known, acks, unconfirmed, codes.encode(facts.idle_scopes()), codes),
        _failover_shares(schema, known, acks, facts.failovers, codes),
        _first_deliveries(schema, sends, recvs, acks, codes.encode(ordered))])
    return _still_uncovered(codes.decode(found, _OUTPUT), facts.final_cursors)


def _covered(events: pa.Table, found: Frontiers) -> pa.Table:
    """The partition's deliveries that cumulative acks covered, each as an ack of its
    value at the covering ack's index and time (no position: it acknowledges any copy)."""
    recvs = events.filter(pc.equal(events["kind"], _RECV))
    got = covered(recvs.select([*ACK_SCOPE, "segment", "value", "position"]), found)
    return rows(_BY_VALUE, got.num_rows, kind=_ACK, index=got["ack_index"],
                time=got["ack_time"], **{c: got[c] for c in [*ACK_SCOPE, "value"]})


def _by_value(scan: Scan) -> pa.Table:
    """A map task's sends (`index` the invoke's), deliveries, individual acks completed
    `ok` (`index` the ack's; what cumulative ones covered is added in each partition,
    see `_decide`), and acks that did not complete `ok` (`index` the invoke's)."""
    if scan.file == OBSERVATIONS_FILE:
        names = ["run", "value", "topic", "subscription", "cluster", "index", "position",
                 "seg"]
        recvs = RECVS.table(scan.read(RECVS.reads(names), _REPEATING), names)
        return rows(_BY_VALUE, recvs.num_rows, kind=_RECV, segment=recvs["seg"],
                    **columns(recvs))
    send_names = ["run", "value", "topic", "cluster", "key", "inv_index", "done_index",
                  "done_time", "outcome", "position"]
    ack_names = ["run", "value", *ACK_SCOPE[1:], "cumulative", "ack_index", "ack_time",
                 "position"]
    invoke_names = ["run", "value", *ACK_SCOPE[1:], "outcome", "inv_index", "position"]
    operations = scan.read(list(dict.fromkeys(SENDS.reads(send_names) + ACKS.reads(ack_names)
                                              + ACK_INVOKES.reads(invoke_names))), _REPEATING)
    sends = SENDS.table(operations, send_names)
    acks = ACKS.table(operations, ack_names)
    acks = acks.filter(pc.invert(acks["cumulative"]))
    invokes = ACK_INVOKES.table(operations, invoke_names)
    unsettled = invokes.filter(pc.invert(pc.fill_null(pc.equal(invokes["outcome"], "ok"), False)))
    return pa.concat_tables([
        rows(_BY_VALUE, sends.num_rows, kind=_SEND, index=sends["inv_index"],
             time=sends["done_time"], **columns(sends)),
        rows(_BY_VALUE, acks.num_rows, kind=_ACK, index=acks["ack_index"],
             time=acks["ack_time"], **columns(acks)),
        rows(_BY_VALUE, unsettled.num_rows, kind=_UNCONFIRMED, index=unsettled["inv_index"],
             **{c: unsettled[c] for c in ["run", "value", *ACK_SCOPE[1:], "position"]})])


def _finding(schema: pa.Schema, checker: str, found: pa.Table,
             **columns: pa.ChunkedArray) -> pa.Table:
    return rows(schema, found.num_rows, kind=FINDING, checker=checker, run=found["run"],
                value=found["value"], **columns)


def _lost(schema: pa.Schema, sends: pa.Table, recvs: pa.Table,
          subscriptions: pa.Table, windows: pa.Table) -> pa.Table:
    """Per acknowledged send and subscription owed it (one that existed on its topic
    before it was invoked): no delivery in that subscription, in any cluster. A pair an
    unlinked cluster never replicated (`checkers.unreplicated`) is `UNREPLICATED`
    instead."""
    acknowledged = sends.filter(pc.equal(sends["outcome"], "ok")).select(
        ["run", "value", "topic", "cluster", "index", "done_index", "time"])
    owed = acknowledged.join(subscriptions, ["run", "topic"], join_type="inner")
    owed = owed.filter(pc.less(owed["since_index"], owed["index"]))
    delivered = recvs.select(_PLACE).group_by(_PLACE).aggregate([])
    missing = owed.join(delivered, _PLACE, join_type="left anti")
    excused = _unreplicated(missing, recvs, windows)
    lost = missing.join(excused.select(_PLACE), _PLACE, join_type="left anti") \
        if excused.num_rows else missing
    return pa.concat_tables([
        _finding(schema, checker, found, topic=found["topic"],
                 subscription=found["subscription"], at=found["index"],
                 proof0=found["done_index"], proof1=found["since_index"])
        for checker, found in (("lost", lost), (UNREPLICATED, excused))])


def _unreplicated(missing: pa.Table, recvs: pa.Table, windows: pa.Table) -> pa.Table:
    """The missing pairs whose send completed in a window of its cluster's unlink, for a
    subscription consumed in the receiver, of values no subscription in the receiver
    received: one row per pair, as `missing`'s."""
    if not windows.num_rows or not missing.num_rows:
        return missing.schema.empty_table()
    placed = ["run", "topic", "subscription", "cluster"]
    hit = missing.join(windows, placed, join_type="inner")
    hit = hit.filter(pc.and_(pc.less_equal(hit["start"], hit["time"]),
                             pc.less_equal(hit["time"], hit["until"])))
    reached = recvs.select(["run", "value", "cluster"]).group_by(
        ["run", "value", "cluster"]).aggregate([])
    unreached = hit.join(reached, ["run", "value", "receiver"],
                         right_keys=["run", "value", "cluster"], join_type="left anti")
    return missing.join(unreached.select(_PLACE).group_by(_PLACE).aggregate([]), _PLACE,
                        join_type="left semi")


def _coded_windows(windows: pa.Table, codes: TextCodes) -> pa.Table:
    """`checkers.unreplicated.WINDOWS` in a partition's codes: the sender as `cluster`,
    the receiver in the same dictionary."""
    receiver = codes.encode(pa.table({"cluster": windows["receiver"]}))["cluster"]
    coded = codes.encode(windows.drop_columns(["receiver"]))
    return coded.append_column("receiver", receiver)


def _unexpected(schema: pa.Schema, sends: pa.Table, recvs: pa.Table) -> pa.Table:
    """Deliveries of a value no send invoked: each subscription's first, in each cluster."""
    sent = sends.select(["run", "value"]).group_by(["run", "value"]).aggregate([])
    stray = recvs.join(sent, ["run", "value"], join_type="left anti")
    firsts = stray.group_by([*_PLACE, "cluster"]).aggregate([("index", "min")])
    return _finding(schema, "unexpected", firsts, topic=firsts["topic"],
                    subscription=firsts["subscription"], cluster=firsts["cluster"],
                    at=firsts["index_min"])


def _failed_delivered(schema: pa.Schema, sends: pa.Table, recvs: pa.Table) -> pa.Table:
    """Per send that failed: the earliest delivery of its value, anywhere."""
    failed = sends.filter(pc.equal(sends["outcome"], "fail")).select(
        ["run", "value", "index", "done_index"])
    earliest = recvs.group_by(["run", "value"]).aggregate([("index", "min")])
    delivered = failed.join(earliest, ["run", "value"], join_type="inner")
    return _finding(schema, "failed-delivered", delivered, at=delivered["index_min"],
                    proof0=delivered["index"], proof1=delivered["done_index"])


def _duplicate(schema: pa.Schema, recvs: pa.Table, acks: pa.Table,
               deduplicating: pa.Array) -> pa.Table:
    """Deliveries after an ack of the value in the same subscription and cluster. Where
    the run does not deduplicate and both positions are known, only an ack of the
    delivery's own position counts: a delivery at another position is another stored
    copy's (a producer's resend, judged by `multi-position`).

    Each delivery meets one earliest ack per way it can be matched (of its own copy, of
    a copy at an unknown position, of any copy), never every acked copy: a value stored
    and delivered thousands of times (a replication loop) would make that pairing
    quadratic, a billion rows for a run of a few hundred thousand events."""
    scope = [*_PLACE, "cluster"]
    recvs = recvs.select([*scope, "index", "position"])
    by_copy = acks.group_by([*scope, "position"]).aggregate([("index", "min")])
    any_copy = by_copy.group_by(scope).aggregate([("index_min", "min")])
    loose = pc.or_kleene(pc.is_null(recvs["position"]), pc.is_in(recvs["run"], deduplicating))
    strict = recvs.filter(pc.invert(loose))
    matched = [
        (recvs.filter(loose).join(any_copy, scope, join_type="inner"), "index_min_min"),
        (strict.join(by_copy.filter(pc.is_valid(by_copy["position"])),
                     [*scope, "position"], join_type="inner"), "index_min"),
        (strict.join(by_copy.filter(pc.is_null(by_copy["position"])).drop_columns("position"),
                     scope, join_type="inner"), "index_min")]
    after = pa.concat_tables([
        pa.table({**{c: found[c] for c in [*scope, "index"]}, "acked": found[acked]})
        for found, acked in matched])
    after = after.filter(pc.less(after["acked"], after["index"]))
    after = after.group_by([*scope, "index"]).aggregate([("acked", "min")])
    return _finding(schema, "duplicate", after, topic=after["topic"],
                    subscription=after["subscription"], cluster=after["cluster"],
                    at=after["index"], proof0=after["acked_min"])


_STORED = ["run", "topic", "cluster", "value"]
RETRY_POSITIONS = 2
"""How many positions one resend of a send can leave: the first copy and the resent one."""


def _multi_position(schema: pa.Schema, sends: pa.Table, recvs: pa.Table,
                    deduplicating: pa.Array, codes: TextCodes) -> pa.Table:
    """Values stored at more than one position of one topic in one cluster (where sends
    completed `ok`, or deliveries came from). Two positions are a producer's resend
    (`PRODUCER_RETRY`) unless the run deduplicates; more are always an anomaly."""
    written = sends.filter(pc.and_(pc.equal(sends["outcome"], "ok"),
                                   pc.is_valid(sends["position"])))
    placed = pa.concat_tables([
        written.select([*_STORED, "position"]).append_column("at", written["done_index"]),
        recvs.filter(pc.is_valid(recvs["position"])).select([*_STORED, "position", "index"])
        .rename_columns([*_STORED, "position", "at"])])
    several = several_values(placed, _STORED, "position")
    if not several.num_rows:
        return schema.empty_table()
    stored = placed.join(several, _STORED, join_type="left semi").group_by(_STORED).aggregate(
        [("position", "distinct"), ("at", "min"), ("at", "max")])
    positions = pa.array([sorted(codes.text("position", pa.array(p, pa.int32())).to_pylist())
                          for p in stored["position_distinct"].to_pylist()],
                         pa.list_(pa.string()))
    legal = pc.and_(pc.equal(pc.list_value_length(positions), RETRY_POSITIONS),
                    pc.invert(pc.is_in(stored["run"], deduplicating)))
    checker = pc.if_else(legal, PRODUCER_RETRY, "multi-position")
    return rows(schema, stored.num_rows, kind=FINDING, checker=checker, run=stored["run"],
                value=stored["value"], topic=stored["topic"], cluster=stored["cluster"],
                at=stored["at_min"], proof0=stored["at_max"], positions=positions)


def _unapplied(schema: pa.Schema, recvs: pa.Table, acks: pa.Table, unconfirmed: pa.Table,
               idle: pa.Table, codes: TextCodes) -> pa.Table:
    """Candidates for `ack-unapplied`, in subscriptions whose final cursor reading shows
    idle consumers (`idle`): per value, its last ack that never completed `ok`, when no
    ack of it did and it was not delivered again after that ack; with the position it was
    delivered at. Whether the final reading covers it is decided after decoding
    (`_still_uncovered`)."""
    scope = [*_PLACE, "cluster"]
    waiting = unconfirmed.join(idle, ACK_SCOPE, join_type="left semi")
    if not waiting.num_rows:
        return schema.empty_table()
    waiting = waiting.join(acks.select(scope), scope, join_type="left anti")
    last_ack = waiting.group_by(scope).aggregate([("index", "max")])
    recvs = recvs.join(last_ack.select(scope), scope, join_type="left semi")
    last_recv = recvs.group_by(scope).aggregate([("index", "max")])
    last_recv = last_recv.join(recvs.select([*scope, "index", "position"]),
                               [*scope, "index_max"], [*scope, "index"], join_type="inner")
    stuck = last_ack.join(last_recv, scope, join_type="inner", right_suffix="_recv")
    stuck = stuck.filter(pc.and_(pc.less(stuck["index_max_recv"], stuck["index_max"]),
                                 pc.is_valid(stuck["position"])))
    positions = pa.ListArray.from_arrays(
        pa.array(range(stuck.num_rows + 1), pa.int32()),
        codes.text("position", stuck["position"].combine_chunks()))
    return _finding(schema, "ack-unapplied", stuck, topic=stuck["topic"],
                    subscription=stuck["subscription"], cluster=stuck["cluster"],
                    at=stuck["index_max"], proof0=stuck["index_max_recv"], positions=positions)


def _still_uncovered(found: pa.Table,
                     final_cursors: dict[CursorScope, tuple[int, CursorReading]]) -> pa.Table:
    """`ack-unapplied` candidates whose final cursor reading does not cover the delivered
    position, with that reading as a proving event; every other row as it is. Candidates
    are few: a loop over them is cheap."""
    candidate = pc.fill_null(pc.equal(found["checker"], "ack-unapplied"), False)
    if not pc.any(candidate).as_py():
        return found
    candidates = found.filter(candidate)
    keep: list[bool] = []
    proof: list[int | None] = []
    for row in candidates.select([*ACK_SCOPE, "positions"]).to_pylist():
        scope: CursorScope = (row["run"], row["topic"], row["subscription"], row["cluster"])
        if scope not in final_cursors:
            keep.append(False)
            proof.append(None)
            continue
        index, reading = final_cursors[scope]
        position = parse_position(row["positions"][0])
        keep.append(position is not None and not reading.covers(position))
        proof.append(index)
    candidates = candidates.set_column(candidates.schema.get_field_index("proof1"), "proof1",
                                       pa.array(proof, pa.int64()))
    return pa.concat_tables([found.filter(pc.invert(candidate)),
                             candidates.filter(pa.array(keep, pa.bool_()))])


def _failover_shares(schema: pa.Schema, recvs: pa.Table, acks: pa.Table,
                     failovers: pa.Table, codes: TextCodes) -> pa.Table:
    """The partition's shares of the failovers' redeliveries (`checkers.failover_windows`)."""
    shares = failover_shares(recvs, acks, failovers, codes)
    if shares is None:
        return schema.empty_table()
    return rows(schema, shares.num_rows, kind=FINDING, checker=FAILOVER_SHARE,
                run=shares["run"], at=shares["failover"], pairs=shares["values"],
                proof0=shares["ack_index"], ack_time=shares["ack_time"],
                proof1=shares["recv_index"])


_ACKED_IN = ["run", "topic", "subscription", "value"]
"""Where an ack ends a value's first deliveries: its subscription, across clusters."""


def _first_deliveries(schema: pa.Schema, sends: pa.Table, recvs: pa.Table, acks: pa.Table,
                      ordered: pa.Table) -> pa.Table:
    """Each keyed send's first delivery in each ordered subscription of its topic, in
    each cluster the subscription was consumed in.

    A delivery after an ack of the value in the subscription, in any cluster, is not a
    first delivery: a replicated subscription consumed in two clusters at once takes
    each cluster's acks as its own (PIP-33's updates move the mark-delete), and an ack
    releases the message's key, so a copy that reaches a consumer afterwards may come
    behind a later message of its key."""
    recvs = recvs.select(["run", "topic", "subscription", "cluster", "value", "index"]).join(
        ordered, ["run", "topic", "subscription"], join_type="left semi")
    acked = (acks.group_by(_ACKED_IN).aggregate([("index", "min")])
             .rename_columns([*_ACKED_IN, "acked"]))
    recvs = recvs.join(acked, _ACKED_IN, join_type="left outer")
    recvs = recvs.filter(pc.invert(pc.fill_null(
        pc.greater(recvs["index"], recvs["acked"]), False))).drop_columns("acked")
    keyed = sends.filter(pc.is_valid(sends["key"]))
    keyed = pa.table({
        "run": keyed["run"], "topic": keyed["topic"], "value": keyed["value"],
        "key": keyed["key"], "inv_index": keyed["index"],
        "ok_index": pc.if_else(pc.equal(keyed["outcome"], "ok"), keyed["done_index"],
                               pa.scalar(None, pa.int64()))})
    firsts = (recvs.join(keyed, ["run", "topic", "value"], join_type="inner")
              .group_by([*KEY, "value", "inv_index", "ok_index"])
              .aggregate([("index", "min")]))
    return rows(schema, firsts.num_rows, kind=FIRST,
                **{c: firsts[c] for c in [*KEY, "value", "inv_index", "ok_index"]},
                first_recv=firsts["index_min"])
