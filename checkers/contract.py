"""`contract`: every `probe` operation whose observation differs from its expectation.

A conformance run's client-contract probes (harness/workloads/contract/) record each
particular expectation as one `probe` operation, `value` the probe's name and the
completion's `detail` holding `expected` and `observed`, both JSON values. They are
compared here as JSON values (an object's keys in any order), whatever the completion's
type says: the checker judges from the recorded facts, not from the harness's own
judgement. A probe that completed `info`, never completed, or completed without both
facts could not be judged: it is reported under `UNDECIDED`, which makes the checker
unknown rather than true (`checkers.check`), unless another attempt of the same probe (the
same name in the same cluster: a group a fault struck runs again) was judged.

Probes are few (tens per run), so one pass of map tasks over the operations finds them,
and a task whose operations hold none reads only the `f` column; only the probes' rows
are then shuffled, to weigh a probe's attempts together.
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.window import Window

from checkers.anomaly import CheckSettings, anomalies, undecided_rows
from checkers.frames import HistoryFrames
from checkers.partitions import Scan, map_scans, scans
from checkers.views import OPERATIONS_FILE
from history.schema import detail_object

CHECKER = "contract"
UNDECIDED = undecided_rows(CHECKER)
"""The rows of probes that could not be judged (the registry entry's `undecided`)."""
PROBE = "probe"
_JUDGED = "judged"
"""The row of a probe that observed what it expected: it decides the probe's other
attempts, and is no finding."""

_READ = ["f", "value", "topic", "subscription", "cluster", "index", "done_index",
         "done_type", "done_error", "detail", "done_detail"]
_FOUND = pa.schema([
    ("checker", pa.string()), ("run", pa.string()), ("probe", pa.string()),
    ("topic", pa.string()), ("subscription", pa.string()), ("cluster", pa.string()),
    ("index", pa.int64()), ("done_index", pa.int64()), ("outcome", pa.string()),
    ("error", pa.string()), ("reason", pa.string()),
    # Canonical JSON text, shown as JSON in the example.
    ("expected", pa.string()), ("observed", pa.string())])


def contract(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """A row per probe whose `observed` differs from its `expected` (`contract`), and
    per probe that could not be judged in any attempt (`UNDECIDED`)."""
    def find(scan: Scan) -> list[pa.RecordBatch]:
        if not pc.any(pc.equal(scan.read(["f"])["f"], PROBE)).as_py():
            return []
        operations = scan.read(_READ)
        probes = operations.filter(pc.equal(operations["f"], PROBE)).to_pylist()
        found = list(map(_judge, probes))
        batches: list[pa.RecordBatch] = pa.Table.from_pylist(found, schema=_FOUND).to_batches()
        return batches

    rows = map_scans(frames.spark, scans(frames.paired, OPERATIONS_FILE), find,
                     from_arrow_schema(_FOUND))
    attempts = Window.partitionBy("run", "probe", "cluster")
    decided = F.max((F.col("checker") != UNDECIDED).cast("int")).over(attempts) == 1
    found = (rows.withColumn("decided", decided)
             .filter((F.col("checker") == CHECKER)
                     | ((F.col("checker") == UNDECIDED) & ~F.col("decided")))
             .drop("decided"))
    return anomalies(F.col("checker"), found, "index", ["index", "done_index"],
                     probe="probe", topic="topic", subscription="subscription",
                     cluster="cluster", outcome="outcome", error="error", reason="reason",
                     expected=F.parse_json("expected"), observed=F.parse_json("observed"))


_MISSING = object()


def _judge(operation: dict[str, Any]) -> dict[str, Any]:
    """The row one probe makes: a finding (`contract`), `_JUDGED` when it observed what it
    expected, or `UNDECIDED`."""
    done = detail_object(operation["done_detail"])
    invoked = detail_object(operation["detail"])
    expected = done.get("expected", invoked.get("expected", _MISSING))
    observed = done.get("observed", _MISSING)
    row = {"run": operation["run"], "probe": operation["value"],
           "topic": operation["topic"], "subscription": operation["subscription"],
           "cluster": operation["cluster"], "index": operation["index"],
           "done_index": operation["done_index"], "outcome": operation["done_type"],
           "error": operation["done_error"]}
    if operation["done_type"] in ("ok", "fail") and _MISSING not in (expected, observed):
        expected_text, observed_text = canonical(expected), canonical(observed)
        if expected_text == observed_text:
            return {**row, "checker": _JUDGED}
        return {**row, "checker": CHECKER, "expected": expected_text,
                "observed": observed_text}
    reason = done.get("reason")
    if operation["done_type"] is None:
        reason = "the probe never completed"
    elif operation["done_type"] != "info":
        reason = "the probe recorded no expectation or no observation"
    return {**row, "checker": UNDECIDED, "reason": reason if isinstance(reason, str) else None,
            "expected": None if expected is _MISSING else canonical(expected)}


def canonical(value: Any) -> str:
    """JSON text that two equal JSON values share (objects' keys sorted)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
