"""The checkers' rules as DuckDB queries: the single-machine yardstick of `bench check`.

Each query follows the definition of its anomaly in docs/history.md over the same Parquet
history the checkers read, so the ratio the bench reports compares the same work: every
checker has its query. One counts differently from its checker, which does not matter on
the bench's histories, whose injected anomalies are single units: `order` counts the
later messages of inverted pairs, where the checker counts pairs (one swap of two
messages of a key is one of each). `contract` compares a probe's expected and observed
JSON through the checker's own Python function (`checkers.contract.canonical`, which sorts
object keys): probes are tens per run, so it costs nothing measurable.

The queries are a yardstick, not a second checker: tests hold them to the counts the
synthetic histories inject and to the checkers' counts on small histories, nothing more.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa

from checkers.contract import canonical
from history.faults import heal_of
from history.schema import (
    DEFAULT_DUPLICATE_WINDOW_BOUND_MS,
    DEFAULT_STALLED_SUBSCRIPTION_BOUND_MS,
    ORDERED_MODES,
    key_hash,
)

QUERIED = ("lost", "unexpected", "failed-delivered", "duplicate", "duplicate-window",
           "forked-position", "multi-position", "order", "misrouted", "dual-write",
           "stalled-subscription", "ack-unapplied", "contract", "unavailable")

_SETUP = """
CREATE TEMP TABLE ev AS SELECT * FROM read_parquet('{path}');
CREATE TEMP TABLE recvs AS
  SELECT "index", topic, subscription, cluster, value, segment, position,
         CAST(string_split(position, ':') AS BIGINT[]) AS pos
  FROM ev WHERE f = 'recv' AND type = 'ok';
-- Every operation's invoke beside its completion: a client process has one outstanding.
CREATE TEMP TABLE ops AS
  SELECT * FROM (
    SELECT "index", time, process, type, f, topic, subscription, cluster, key, value,
           detail, position,
           lead(type) OVER w AS done_type, lead("index") OVER w AS done_index,
           lead(time) OVER w AS done_time, lead(position) OVER w AS done_position,
           lead(segment) OVER w AS done_segment, lead(detail) OVER w AS done_detail
    FROM ev WHERE type = 'invoke' OR f NOT IN ('recv', 'layout', 'meta', 'cursor')
    WINDOW w AS (PARTITION BY process ORDER BY "index"))
  WHERE type = 'invoke';
CREATE TEMP TABLE dedup AS
  SELECT coalesce(bool_or(json_extract_string(detail, '$.deduplication') = 'true'), false)
         AS enabled FROM ev WHERE f = 'meta';
-- When each delivered value counted as acknowledged in its subscription and cluster (for
-- `duplicate` and `duplicate-window`): by its own ack, or from a cumulative ack's
-- completion at or past its position in its segment (or topic), at or below the highest
-- position cumulatively acknowledged so far.
CREATE TEMP TABLE moments AS
WITH acks AS (
  SELECT topic, subscription, cluster, value, coalesce(position, done_position) AS position,
         done_index, done_time,
         coalesce(json_extract_string(detail, '$.cumulative'),
                  json_extract_string(done_detail, '$.cumulative')) = 'true' AS cum
  FROM ops WHERE f = 'ack' AND done_type = 'ok'),
individual AS (
  SELECT topic, subscription, cluster, value, position, min(done_index) AS acked,
         min(done_time) AS acked_time
  FROM acks WHERE NOT coalesce(cum, false) GROUP BY ALL),
delivered AS (SELECT DISTINCT topic, subscription, cluster, value, segment, pos FROM recvs),
marks AS (
  SELECT d.topic, d.subscription, d.cluster, d.segment,
         max(d.pos) OVER (PARTITION BY d.topic, d.subscription, d.cluster, d.segment
                          ORDER BY a.done_index) AS mark, a.done_index AS acked,
         a.done_time AS acked_time, NULL::VARCHAR AS value, 0 AS kind
  FROM acks a JOIN delivered d USING (topic, subscription, cluster, value) WHERE a.cum),
walk AS (
  SELECT *, min(acked) OVER downwards AS covering,
         min(acked_time) OVER downwards AS covering_time
  FROM (SELECT * FROM marks UNION ALL
        SELECT topic, subscription, cluster, segment, pos, NULL, NULL, value, 1
        FROM delivered WHERE (topic, subscription, cluster, segment) IN
              (SELECT (topic, subscription, cluster, segment) FROM marks))
  WINDOW downwards AS (PARTITION BY topic, subscription, cluster, segment
                       ORDER BY mark DESC, kind))
SELECT * FROM individual UNION ALL
SELECT topic, subscription, cluster, value, NULL, min(covering), min(covering_time) FROM walk
WHERE kind = 1 AND covering IS NOT NULL GROUP BY ALL;
-- Every `cursor` observation, its mark-delete position and counts read as the checkers
-- read them (`history.cursor`): a batch index ignored, a missing count 0.
CREATE TEMP TABLE readings AS
  SELECT "index", time, topic, subscription, cluster,
         TRY_CAST(string_split(regexp_extract(position, '^-?[0-9]+:-?[0-9]+'), ':') AS BIGINT[])
           AS mark,
         CAST(json_extract(detail, '$.individually_deleted') AS VARCHAR) AS ranges,
         CAST(json_extract(detail, '$.segments.*.mark_delete') AS VARCHAR) AS segment_marks,
         coalesce(TRY_CAST(json_extract_string(detail, '$.backlog') AS BIGINT), 0) AS backlog,
         coalesce(TRY_CAST(json_extract_string(detail, '$.consumers') AS BIGINT), 0)
           AS consumers,
         coalesce(TRY_CAST(json_extract_string(detail, '$.unacked') AS BIGINT), 0) AS unacked
  FROM ev WHERE f = 'cursor';
CREATE TEMP TABLE failovers AS
  SELECT "index" AS moved, time AS moved_at, topic, coalesce(subscription, value) AS subscription,
         coalesce(json_extract_string(done_detail, '$.from'),
                  json_extract_string(detail, '$.from')) AS source,
         coalesce(json_extract_string(done_detail, '$.to'),
                  json_extract_string(detail, '$.to')) AS dest
  FROM ops WHERE f = 'failover' AND done_type = 'ok';
"""

_QUERIES = {
    "lost": """
WITH sends AS (SELECT topic, value, "index" AS inv FROM ops
               WHERE f = 'send' AND done_type = 'ok'),
     subs AS (SELECT topic, coalesce(subscription, value) AS sub, min(done_index) AS since
              FROM ops WHERE f = 'subscribe' AND done_type = 'ok' GROUP BY ALL),
     got AS (SELECT DISTINCT topic, subscription, value FROM recvs)
SELECT count(*) FROM sends JOIN subs USING (topic)
WHERE since < inv AND NOT EXISTS (
  SELECT 1 FROM got WHERE got.topic = sends.topic AND got.subscription = subs.sub
                      AND got.value = sends.value)
""",
    "unexpected": """
SELECT count(*) FROM (SELECT DISTINCT topic, subscription, cluster, value FROM recvs
                      WHERE value NOT IN (SELECT value FROM ops WHERE f = 'send'))
""",
    "failed-delivered": """
SELECT count(DISTINCT value) FROM recvs
WHERE value IN (SELECT value FROM ops WHERE f = 'send' AND done_type = 'fail')
""",
    "duplicate": """
WITH dups AS (
  SELECT r."index", r.topic, r.subscription, r.cluster, min(m.acked) AS acked
  FROM recvs r JOIN moments m USING (topic, subscription, cluster, value)
  WHERE m.acked < r."index"
    AND (r.position IS NULL OR m.position IS NULL OR (SELECT enabled FROM dedup)
         OR r.position = m.position)
  GROUP BY ALL)
SELECT count(*) FROM dups d WHERE NOT EXISTS (
  SELECT 1 FROM failovers f
  WHERE f.subscription = d.subscription AND (f.topic IS NULL OR f.topic = d.topic)
    AND f.dest = d.cluster AND f.moved BETWEEN d.acked AND d."index")
""",
    "duplicate-window": """
WITH nemesis AS (SELECT "index", f, time, coalesce(done_time, time) AS ended FROM ops
                 WHERE process = 'nemesis'),
-- A failover during a replication outage, or in the recovery after it ends (the longer of
-- the replicators' and the run's snapshot timeout and a moment), is not judged.
outage_ops AS (SELECT * FROM (VALUES {outage_ops}) AS t(op, heal)),
recovery AS (
  SELECT CAST(greatest({recovery_ms}, coalesce(max(CAST(json_extract(
           detail, '$.snapshot_timeout_ms') AS DOUBLE)), {snapshot_timeout_ms})
         + {after_timeout_ms}) * 1000000 AS BIGINT) AS ns
  FROM ev WHERE f = 'meta'),
cuts AS (
  SELECT c.time AS cut,
         CASE WHEN o.heal IS NULL THEN c.ended + (SELECT ns FROM recovery)
              ELSE coalesce((SELECT arg_min(h.ended, h."index") FROM nemesis h
                             WHERE h."index" > c."index" AND h.f IN (o.heal, 'heal'))
                            + (SELECT ns FROM recovery),
                            9223372036854775807) END AS until
  FROM nemesis c JOIN outage_ops o ON c.f = o.op),
judged AS (SELECT * FROM failovers f WHERE NOT EXISTS (
  SELECT 1 FROM cuts WHERE f.moved_at BETWEEN cuts.cut AND cuts.until)),
windows AS (
  SELECT j.moved, j.moved_at, min(m.acked_time) AS earliest
  FROM judged j
  JOIN recvs r ON r.subscription = j.subscription AND (j.topic IS NULL OR r.topic = j.topic)
              AND r.cluster = j.dest AND r."index" > j.moved
  JOIN moments m ON m.topic = r.topic AND m.subscription = r.subscription
                AND m.cluster = j.source AND m.value = r.value AND m.acked < j.moved
  GROUP BY ALL),
bound AS (SELECT coalesce(max(CAST(json_extract(detail, '$.duplicate_window_bound_ms')
                                   AS DOUBLE)), {default_bound_ms}) AS ms
          FROM ev WHERE f = 'meta')
SELECT count(*) FROM windows WHERE (moved_at - earliest) / 1e6 > (SELECT ms FROM bound)
""",
    "forked-position": """
WITH placed AS (
  SELECT topic, cluster, done_segment AS segment,
         CAST(string_split(done_position, ':') AS BIGINT[]) AS pos, value
  FROM ops WHERE f = 'send' AND done_type = 'ok' AND done_position IS NOT NULL
  UNION ALL SELECT topic, cluster, segment, pos, value FROM recvs WHERE pos IS NOT NULL)
SELECT count(*) FROM (SELECT 1 FROM placed GROUP BY topic, cluster, segment, pos
                      HAVING count(DISTINCT value) > 1)
""",
    "multi-position": """
WITH placed AS (
  SELECT topic, cluster, value, done_position AS position FROM ops
  WHERE f = 'send' AND done_type = 'ok' AND done_position IS NOT NULL
  UNION ALL SELECT topic, cluster, value, position FROM recvs WHERE position IS NOT NULL),
spread AS (SELECT count(DISTINCT position) AS n FROM placed GROUP BY topic, cluster, value)
SELECT count(*) FROM spread WHERE n >= 3 OR (n = 2 AND (SELECT enabled FROM dedup))
""",
    "order": """
WITH ordered AS (
  SELECT topic, coalesce(subscription, value) AS sub FROM ops
  WHERE f = 'subscribe' AND done_type = 'ok'
    AND coalesce(json_extract_string(detail, '$.mode'),
                 json_extract_string(done_detail, '$.mode')) IN {modes}
  GROUP BY ALL),
-- A delivery after an ack of the value in its subscription, in any cluster, is no first.
acked AS (SELECT topic, subscription, value, min(acked) AS acked FROM moments GROUP BY ALL),
firsts AS (
  SELECT r.topic, r.subscription, r.cluster, r.value, min(r."index") AS first
  FROM recvs r JOIN ordered o ON r.topic = o.topic AND r.subscription = o.sub
  LEFT JOIN acked a ON a.topic = r.topic AND a.subscription = r.subscription
                   AND a.value = r.value
  WHERE a.acked IS NULL OR r."index" < a.acked GROUP BY ALL),
keyed AS (
  SELECT s.topic, f.subscription, f.cluster, s.key, s.value, s."index" AS inv,
         CASE WHEN s.done_type = 'ok' THEN s.done_index END AS ok, f.first
  FROM ops s JOIN firsts f USING (topic, value)
  WHERE s.f = 'send' AND s.key IS NOT NULL),
-- In index order per key: each acknowledged send marks its first delivery; an invoke
-- first delivered before the highest mark so far is the later message of an inversion.
steps AS (
  SELECT topic, subscription, cluster, key, ok AS step, first, 0 AS kind FROM keyed
  WHERE ok IS NOT NULL
  UNION ALL SELECT topic, subscription, cluster, key, inv, first, 1 FROM keyed),
walked AS (
  SELECT kind, first, max(CASE WHEN kind = 0 THEN first END) OVER (
           PARTITION BY topic, subscription, cluster, key ORDER BY step, kind
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS highest
  FROM steps)
SELECT count(*) FROM walked WHERE kind = 1 AND highest > first
""",
    "misrouted": """
WITH segments AS (
  SELECT DISTINCT CAST(id AS BIGINT) AS segment,
         CAST(json_extract(detail, '$.segments."' || id || '".hashRange.start') AS BIGINT) AS lo,
         CAST(json_extract(detail, '$.segments."' || id || '".hashRange.end') AS BIGINT) AS hi
  FROM (SELECT detail, unnest(json_keys(detail, '$.segments')) AS id
        FROM ev WHERE f = 'layout' AND type = 'ok'))
SELECT count(*) FROM ops s JOIN key_hashes h USING (key) JOIN segments g
  ON g.segment = s.done_segment
WHERE s.f = 'send' AND s.done_type = 'ok' AND (h.hash < g.lo OR h.hash > g.hi)
""",
    "dual-write": """
WITH RECURSIVE parents AS (
  SELECT DISTINCT topic, CAST(id AS BIGINT) AS child, CAST(parent AS BIGINT) AS parent
  FROM (SELECT topic, id, unnest(CAST(json_extract(detail, '$.segments."' || id || '".parentIds')
                                       AS BIGINT[])) AS parent
        FROM (SELECT topic, detail, unnest(json_keys(detail, '$.segments')) AS id
              FROM ev WHERE f = 'layout' AND type = 'ok'))),
descends(topic, ancestor, descendant) AS (
  SELECT topic, parent, child FROM parents
  UNION SELECT d.topic, d.ancestor, p.child FROM descends d
        JOIN parents p ON p.topic = d.topic AND p.parent = d.descendant),
first_writes AS (
  SELECT topic, done_segment AS segment, min(done_time) AS first FROM ops
  WHERE f = 'send' AND done_type = 'ok' AND done_segment IS NOT NULL GROUP BY ALL),
limits AS (
  SELECT d.topic, d.ancestor AS segment, min(w.first) AS first FROM descends d
  JOIN first_writes w ON w.topic = d.topic AND w.segment = d.descendant GROUP BY ALL)
SELECT count(DISTINCT s.value) FROM ops s JOIN limits l
  ON l.topic = s.topic AND l.segment = s.done_segment
WHERE s.f = 'send' AND s.done_type = 'ok' AND s.time > l.first
""",
    "stalled-subscription": """
-- Islands of consecutive idle readings (a backlog, consumers, nothing out at them) with
-- one cursor (and, on a scalable topic, every segment's mark-delete position); a stall
-- starts at each reading whose backlog is below every earlier one of its island (a
-- backlog may not fall below the stall's first), and counts when its readings span more
-- than the bound.
WITH flagged AS (
  SELECT *, backlog > 0 AND consumers > 0 AND unacked = 0 AS idle,
         lag(backlog > 0 AND consumers > 0 AND unacked = 0) OVER w AS idle_before,
         lag(mark) OVER w AS mark_before, lag(ranges) OVER w AS ranges_before,
         lag(segment_marks) OVER w AS segment_marks_before
  FROM readings WINDOW w AS (PARTITION BY topic, subscription, cluster ORDER BY "index")),
islands AS (
  SELECT *, sum(CASE WHEN idle AND idle_before AND mark IS NOT DISTINCT FROM mark_before
                          AND ranges IS NOT DISTINCT FROM ranges_before
                          AND segment_marks IS NOT DISTINCT FROM segment_marks_before
                     THEN 0 ELSE 1 END)
              OVER (PARTITION BY topic, subscription, cluster ORDER BY "index") AS island
  FROM flagged),
lows AS (
  SELECT *, min(backlog) OVER (PARTITION BY topic, subscription, cluster, island
                               ORDER BY "index" ROWS BETWEEN UNBOUNDED PRECEDING
                               AND 1 PRECEDING) AS lowest_before
  FROM islands WHERE idle),
stalls AS (
  SELECT topic, subscription, cluster, island, time,
         sum(CASE WHEN lowest_before IS NULL OR backlog < lowest_before THEN 1 ELSE 0 END)
           OVER (PARTITION BY topic, subscription, cluster, island ORDER BY "index") AS stall
  FROM lows),
bound AS (SELECT coalesce(max(CAST(json_extract(detail, '$.stalled_subscription_bound_ms')
                                   AS DOUBLE)), {stalled_bound_ms}) AS ms
          FROM ev WHERE f = 'meta')
SELECT count(*) FROM (SELECT max(time) - min(time) AS span FROM stalls
                      GROUP BY topic, subscription, cluster, island, stall)
WHERE span / 1e6 > (SELECT ms FROM bound)
""",
    "ack-unapplied": """
-- After the first completed drain, each subscription's last reading; where it shows idle
-- consumers, a value whose acks never completed `ok` (nor a cumulative ack covered it),
-- last delivered before its last ack's invoke at a position the reading does not hold.
WITH drained AS (SELECT min(done_index) AS ok FROM ops WHERE f = 'drain' AND done_type = 'ok'),
final AS (
  SELECT * FROM readings WHERE "index" > (SELECT ok FROM drained)
  QUALIFY row_number() OVER (PARTITION BY topic, subscription, cluster
                             ORDER BY "index" DESC) = 1),
idle AS (SELECT * FROM final WHERE consumers > 0 AND unacked = 0 AND mark IS NOT NULL),
held AS (
  SELECT topic, subscription, cluster,
         CAST(string_split(json_extract_string(pair, '$[0]'), ':') AS BIGINT[])[1:2] AS lo,
         CAST(string_split(json_extract_string(pair, '$[1]'), ':') AS BIGINT[])[1:2] AS hi
  FROM (SELECT topic, subscription, cluster, unnest(CAST(ranges AS JSON[])) AS pair
        FROM idle)),
unsettled AS (
  SELECT topic, subscription, cluster, value, max("index") AS ack FROM ops
  WHERE f = 'ack' AND done_type IS DISTINCT FROM 'ok' GROUP BY ALL),
last_recv AS (
  SELECT topic, subscription, cluster, value, "index" AS last, pos[1:2] AS pos FROM recvs
  QUALIFY row_number() OVER (PARTITION BY topic, subscription, cluster, value
                             ORDER BY "index" DESC) = 1)
SELECT count(*) FROM unsettled u JOIN idle i USING (topic, subscription, cluster)
JOIN last_recv r USING (topic, subscription, cluster, value)
WHERE r.last < u.ack AND r.pos IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM moments m
                  WHERE (m.topic, m.subscription, m.cluster, m.value)
                        = (u.topic, u.subscription, u.cluster, u.value))
  AND NOT coalesce(r.pos <= i.mark, false)
  AND NOT EXISTS (SELECT 1 FROM held h
                  WHERE (h.topic, h.subscription, h.cluster)
                        = (u.topic, u.subscription, u.cluster)
                    AND h.lo < r.pos AND r.pos <= h.hi)
""",
    "contract": """
WITH probes AS (
  SELECT coalesce(json_extract(done_detail, '$.expected'),
                  json_extract(detail, '$.expected')) AS expected,
         json_extract(done_detail, '$.observed') AS observed
  FROM ops WHERE f = 'probe' AND done_type IN ('ok', 'fail'))
SELECT count(*) FROM probes
WHERE canonical_json(CAST(expected AS VARCHAR)) != canonical_json(CAST(observed AS VARCHAR))
""",
    "unavailable": """
-- Each send waits until a send of its key (topic, cluster) invoked at or after it completes
-- `ok`, else until the key's last send event; judged only when the meta sets a bound.
WITH bound AS (SELECT max(CAST(json_extract(detail, '$.unavailable_bound_ms') AS DOUBLE)) AS ms
               FROM ev WHERE f = 'meta'),
waits AS (
  SELECT time, coalesce(
           min(CASE WHEN done_type = 'ok' THEN done_time END) OVER (
             PARTITION BY topic, cluster, key ORDER BY time DESC, "index" DESC
             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
           max(coalesce(done_time, time)) OVER (PARTITION BY topic, cluster, key)) AS until
  FROM ops WHERE f = 'send' AND (SELECT ms FROM bound) IS NOT NULL)
SELECT count(*) FROM waits WHERE until - time > (SELECT ms FROM bound) * 1000000
""",
}


def setup_for(names: Sequence[str]) -> list[str]:
    """The statements of _SETUP that the queries of `names` need, directly or through
    another table, in _SETUP's order: the four core questions skip the cursor readings,
    whose JSON details are the costliest table to build."""
    statements = {found[1]: text for text in _SETUP.split(";")
                  if (found := re.search(r"CREATE TEMP TABLE (\w+)", text))}

    def used_by(text: str) -> set[str]:
        return {table for table in statements if re.search(rf"\b{table}\b", text)}

    needed = set().union(*(used_by(_QUERIES[name]) for name in names))
    while more := set().union(*(used_by(statements[t]) for t in needed)) - needed:
        needed |= more
    return [text for table, text in statements.items() if table in needed]


@dataclass(frozen=True)
class DuckdbCounts:
    counts: dict[str, int]
    seconds: float
    """From opening the file to the last count, the key hashes included."""


def duckdb_counts(path: Path, names: Sequence[str] = QUERIED) -> DuckdbCounts:
    """The count of each checker `names` lists (every queried one by default) over the
    history at `path`, and the time taken."""
    import duckdb
    from duckdb.sqltypes import VARCHAR

    from checkers.duplicates import (
        AFTER_TIMEOUT_MS,
        RECOVERY_MS,
        REPLICATION_OUTAGES,
        SNAPSHOT_TIMEOUT_MS,
    )

    modes = "(" + ", ".join(f"'{mode}'" for mode in ORDERED_MODES) + ")"
    outage_ops = ", ".join(f"('{op}', {'NULL' if heal_of(op) is None else repr(heal_of(op))})"
                           for op in REPLICATION_OUTAGES)
    started = time.perf_counter()
    with duckdb.connect() as db:
        db.execute("SET enable_progress_bar = false")  # its bars would fill the bench's log
        for statement in setup_for(names):
            db.execute(statement.format(path=path))
        if "misrouted" in names:  # the only query that needs every key's hash
            keys = [row[0] for row in db.execute(
                "SELECT DISTINCT key FROM ops WHERE f = 'send' AND key IS NOT NULL"
            ).fetchall()]
            db.register("key_hashes", pa.table({
                "key": pa.array(keys, pa.string()),
                "hash": pa.array(np.fromiter((key_hash(k) for k in keys), np.int64,
                                             len(keys)))}))
        db.create_function("canonical_json", lambda text: canonical(orjson.loads(text)),
                           [VARCHAR], VARCHAR)
        counts = {}
        for name in names:
            row = db.execute(_QUERIES[name].format(
                modes=modes, outage_ops=outage_ops, recovery_ms=RECOVERY_MS,
                snapshot_timeout_ms=SNAPSHOT_TIMEOUT_MS, after_timeout_ms=AFTER_TIMEOUT_MS,
                default_bound_ms=DEFAULT_DUPLICATE_WINDOW_BOUND_MS,
                stalled_bound_ms=DEFAULT_STALLED_SUBSCRIPTION_BOUND_MS)).fetchone()
            assert row is not None, "an aggregate query answers one row"
            counts[name] = int(row[0])
    return DuckdbCounts(counts, time.perf_counter() - started)
