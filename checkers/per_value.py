"""What each value's events prove: the first of the two passes behind `checkers.delivery`.

One shuffle by value brings every send, delivery and acknowledgement of a value into one
partition, and a Python worker decides each partition as a whole with Arrow's joins and
aggregates (`checkers.partitions`): the anomalies of `lost`, `unexpected`,
`failed-delivered` and `duplicate`, and each keyed message's first delivery in each
ordered subscription (what `order` compares). Both come out in one table, told apart by
`kind`, which the same worker cuts by key for `order`'s pass; the findings are few and
ride along.

Joins here, as in SQL, never match a null key: a delivery with no topic or subscription
proves nothing delivered, and a value that is null is never shown delivered.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.frames import ACK_SCOPE, HistoryFrames
from checkers.partitions import (
    Scan,
    TextCodes,
    columns,
    decide_and_scatter,
    gather,
    rows,
    scatter_frame,
    scatter_scans,
)
from checkers.views import ACKS, OBSERVATIONS_FILE, RECVS, SENDS
from history.schema import ORDERED_MODES

FINDINGS = pa.schema([
    ("run", pa.string()), ("checker", pa.string()), ("value", pa.string()),
    ("topic", pa.string()), ("subscription", pa.string()), ("cluster", pa.string()),
    ("key", pa.string()),
    # `at` is the finding's own event (its sort key), `proof*` the others that prove it.
    ("at", pa.int64()), ("proof0", pa.int64()), ("proof1", pa.int64()),
    ("proof2", pa.int64()),
    # `order`'s: the first out-of-order pair, and how many pairs the key has.
    ("earlier", pa.string()), ("later", pa.string()), ("pairs", pa.int64())])
"""An anomaly, as both passes give them."""
FIRSTS = ["inv_index", "ok_index", "first_recv"]
"""A keyed send (its `key`, `value`, `topic`), and its first delivery in `subscription`."""
KEY = ["run", "topic", "subscription", "key"]
"""Where `order` compares deliveries: the output is partitioned by these."""
FINDING, FIRST = "finding", "first"
"""`kind` of an output row: an anomaly, or a first delivery."""

_SEND, _RECV, _ACK = 0, 1, 2
_BY_VALUE = pa.schema([
    ("run", pa.string()), ("value", pa.string()), ("kind", pa.int32()),
    ("topic", pa.string()), ("subscription", pa.string()), ("cluster", pa.string()),
    ("key", pa.string()), ("index", pa.int64()), ("done_index", pa.int64()),
    ("outcome", pa.string())])
"""What the pass shuffles: a send, a delivery or an ack (`kind`) of a value."""
_OUTPUT = pa.schema([("kind", pa.string()), *FINDINGS,
                     *(pa.field(name, pa.int64()) for name in FIRSTS)])
_PLACE = ["run", "value", "topic", "subscription"]
_TEXT_KEYS = [*_PLACE, "cluster", "key"]


def per_value(frames: HistoryFrames) -> DataFrame:
    """The pass's output (see the module), gathered by key (`KEY`) for `order`'s pass."""
    subscriptions = frames.subscription_table()
    ordered = frames.subscription_table(ORDERED_MODES).select(["run", "topic", "subscription"])
    tasks = frames.scans()
    scattered = [scatter_scans(frames.spark, tasks, _by_value, "value", frames.partitions)]
    if frames.cumulative_ack_runs:
        covered = frames.covered_by_cumulative_acks().select(
            "run", "value", F.lit(_ACK).alias("kind"), *ACK_SCOPE[1:],
            F.col("ack.ack_index").alias("index"))
        scattered.append(scatter_frame(covered, _BY_VALUE, "value", frames.partitions))
    by_value = gather(scattered, frames.partitions)
    decided = decide_and_scatter(
        by_value, lambda events: _decide(events, subscriptions, ordered), "key",
        frames.partitions)
    return gather([decided], frames.partitions)


def _decide(events: pa.Table, subscriptions: pa.Table, ordered: pa.Table) -> pa.Table:
    """Everything one partition's values prove."""
    codes = TextCodes(events, _TEXT_KEYS)
    coded = codes.table

    def of(kind: int) -> pa.Table:
        return coded.filter(pc.equal(coded["kind"], kind))

    sends, recvs, acks = of(_SEND), of(_RECV), of(_ACK)
    known = recvs.filter(pc.is_valid(recvs["value"]))
    schema = codes.coded(_OUTPUT)
    found = pa.concat_tables([
        _lost(schema, sends, known, codes.encode(subscriptions)),
        _unexpected(schema, sends, recvs), _failed_delivered(schema, sends, known),
        _duplicate(schema, known, acks),
        _first_deliveries(schema, sends, recvs, codes.encode(ordered))])
    return codes.decode(found, _OUTPUT)


def _by_value(scan: Scan) -> pa.Table:
    """A map task's sends (`index` the invoke's), deliveries, and individual acks
    (`index` the ack's; cumulative ones come covered, from Spark, see `per_value`)."""
    if scan.file == OBSERVATIONS_FILE:
        names = ["run", "value", "topic", "subscription", "cluster", "index"]
        recvs = RECVS.table(scan.read(RECVS.reads(names)), names)
        return rows(_BY_VALUE, recvs.num_rows, kind=_RECV,
                    **columns(recvs))
    send_names = ["run", "value", "topic", "cluster", "key", "inv_index", "done_index",
                  "outcome"]
    ack_names = ["run", "value", *ACK_SCOPE[1:], "cumulative", "ack_index"]
    operations = scan.read(list(dict.fromkeys(SENDS.reads(send_names)
                                              + ACKS.reads(ack_names))))
    sends = SENDS.table(operations, send_names)
    acks = ACKS.table(operations, ack_names)
    acks = acks.filter(pc.invert(acks["cumulative"]))
    return pa.concat_tables([
        rows(_BY_VALUE, sends.num_rows, kind=_SEND, index=sends["inv_index"],
             **columns(sends)),
        rows(_BY_VALUE, acks.num_rows, kind=_ACK, index=acks["ack_index"],
             **columns(acks))])


def _finding(schema: pa.Schema, checker: str, found: pa.Table,
             **columns: pa.ChunkedArray) -> pa.Table:
    return rows(schema, found.num_rows, kind=FINDING, checker=checker, run=found["run"],
                value=found["value"], **columns)


def _lost(schema: pa.Schema, sends: pa.Table, recvs: pa.Table,
          subscriptions: pa.Table) -> pa.Table:
    """Per acknowledged send and subscription owed it (one that existed on its topic
    before it was invoked): no delivery in that subscription, in any cluster."""
    acknowledged = sends.filter(pc.equal(sends["outcome"], "ok")).select(
        ["run", "value", "topic", "index", "done_index"])
    owed = acknowledged.join(subscriptions, ["run", "topic"], join_type="inner")
    owed = owed.filter(pc.less(owed["since_index"], owed["index"]))
    delivered = recvs.select(_PLACE).group_by(_PLACE).aggregate([])
    lost = owed.join(delivered, _PLACE, join_type="left anti")
    return _finding(schema, "lost", lost, topic=lost["topic"],
                    subscription=lost["subscription"], at=lost["index"],
                    proof0=lost["done_index"], proof1=lost["since_index"])


def _unexpected(schema: pa.Schema, sends: pa.Table, recvs: pa.Table) -> pa.Table:
    """Deliveries of a value no send invoked: each subscription's first."""
    sent = sends.select(["run", "value"]).group_by(["run", "value"]).aggregate([])
    stray = recvs.join(sent, ["run", "value"], join_type="left anti")
    firsts = stray.group_by(_PLACE).aggregate([("index", "min")])
    return _finding(schema, "unexpected", firsts, topic=firsts["topic"],
                    subscription=firsts["subscription"], at=firsts["index_min"])


def _failed_delivered(schema: pa.Schema, sends: pa.Table, recvs: pa.Table) -> pa.Table:
    """Per send that failed: the earliest delivery of its value, anywhere."""
    failed = sends.filter(pc.equal(sends["outcome"], "fail")).select(
        ["run", "value", "index", "done_index"])
    earliest = recvs.group_by(["run", "value"]).aggregate([("index", "min")])
    delivered = failed.join(earliest, ["run", "value"], join_type="inner")
    return _finding(schema, "failed-delivered", delivered, at=delivered["index_min"],
                    proof0=delivered["index"], proof1=delivered["done_index"])


def _duplicate(schema: pa.Schema, recvs: pa.Table, acks: pa.Table) -> pa.Table:
    """Deliveries after the value's earliest ack in the same subscription and cluster."""
    scope = [*_PLACE, "cluster"]
    earliest = acks.group_by(scope).aggregate([("index", "min")])
    after = recvs.select([*scope, "index"]).join(earliest, scope, join_type="inner")
    after = after.filter(pc.less(after["index_min"], after["index"]))
    return _finding(schema, "duplicate", after, topic=after["topic"],
                    subscription=after["subscription"], cluster=after["cluster"],
                    at=after["index"], proof0=after["index_min"])


def _first_deliveries(schema: pa.Schema, sends: pa.Table, recvs: pa.Table,
                      ordered: pa.Table) -> pa.Table:
    """Each keyed send's first delivery in each ordered subscription of its topic."""
    recvs = recvs.select(["run", "topic", "subscription", "value", "index"]).join(
        ordered, ["run", "topic", "subscription"], join_type="left semi")
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
