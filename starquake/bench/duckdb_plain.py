"""The four core questions as one plain DuckDB query: the end-to-end bench's second baseline.

`duckdb_checks` follows the checkers' definitions (cumulative acknowledgements, failovers,
positions, deduplication), builds tables first and is slower for it. A user who opens a
history in DuckDB to ask "what was lost, unexpected, delivered after failing, delivered
again after its ack" writes something shorter: one statement over the Parquet file, each
invoke paired with its process's next operation, acknowledgements taken one by one. That
is the baseline this query stands for, so the bench's ratio to it is the one a user would
reckon, not one kinder to Spark.

It counts `lost`, `unexpected` and `failed-delivered` as the checkers do on the bench's
histories (the bench verifies them). Its `duplicate` is the plain reading: a delivery after
an individual acknowledgement of the value in the same subscription and cluster, with no
failover excusing it, no cumulative acknowledgement covering it and no position compared;
so it counts more than the checker, and is not verified.
"""

from __future__ import annotations

import time
from pathlib import Path

from starquake.bench.duckdb_checks import DuckdbCounts

VERIFIED = ("lost", "unexpected", "failed-delivered")
"""The answers that must equal the checkers' counts; `duplicate` reads more plainly."""

_QUERY = """
WITH ev AS (SELECT "index", process, type, f, topic, subscription, cluster, value
            FROM read_parquet('{path}')),
ops AS (SELECT * FROM (
          SELECT "index", type, f, topic, subscription, cluster, value,
                 lead(type) OVER w AS done_type, lead("index") OVER w AS done_index
          FROM ev WHERE f <> 'recv'
          WINDOW w AS (PARTITION BY process ORDER BY "index"))
        WHERE type = 'invoke'),
recvs AS (SELECT "index", topic, subscription, cluster, value FROM ev
          WHERE f = 'recv' AND type = 'ok'),
sends AS (SELECT topic, value, "index" AS invoked, done_type FROM ops WHERE f = 'send'),
subscriptions AS (SELECT topic, coalesce(subscription, value) AS subscription,
                         min(done_index) AS since
                  FROM ops WHERE f = 'subscribe' AND done_type = 'ok' GROUP BY ALL),
received AS (SELECT DISTINCT topic, subscription, value FROM recvs),
acked AS (SELECT topic, subscription, cluster, value, min(done_index) AS acked
          FROM ops WHERE f = 'ack' AND done_type = 'ok' GROUP BY ALL)
SELECT
  (SELECT count(*) FROM sends s JOIN subscriptions USING (topic)
   WHERE s.done_type = 'ok' AND since < invoked AND NOT EXISTS (
     SELECT 1 FROM received r WHERE r.topic = s.topic
       AND r.subscription = subscriptions.subscription AND r.value = s.value)),
  (SELECT count(*) FROM (SELECT DISTINCT topic, subscription, cluster, value FROM recvs
                         WHERE value NOT IN (SELECT value FROM sends))),
  (SELECT count(DISTINCT value) FROM recvs
   WHERE value IN (SELECT value FROM sends WHERE done_type = 'fail')),
  (SELECT count(*) FROM recvs r JOIN acked a USING (topic, subscription, cluster, value)
   WHERE a.acked < r."index")
"""


def plain_counts(path: Path) -> DuckdbCounts:
    """The four answers of the plain query over the history at `path`, and the time from
    connecting to the last answer."""
    import duckdb

    started = time.perf_counter()
    with duckdb.connect() as db:
        db.execute("SET enable_progress_bar = false")  # its bars would fill the bench's log
        row = db.execute(_QUERY.format(path=path)).fetchone()
    assert row is not None, "an aggregate query answers one row"
    counts = dict(zip(("lost", "unexpected", "failed-delivered", "duplicate"),
                      (int(n) for n in row), strict=True))
    return DuckdbCounts(counts, time.perf_counter() - started)
