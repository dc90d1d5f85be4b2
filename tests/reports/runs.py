"""Run directories for the report tests, each standing for a kind of run a person reads a
report of: a clean one, one with every anomaly the synthetic generator injects, a geo run
with faults, splits, a merge and a failover over its duplicate bound, and one cut short."""

from __future__ import annotations

import json
from pathlib import Path

from checkers.synthetic import INJECTABLE, SyntheticSpec, write_jsonl
from history.schema import key_hash
from tests.checkers.builder import History

GEO_BOUND_MS = 100
GEO_SNAPSHOT_TIMEOUT_MS = 3000
"""Short, so that the failover at 22 s is past every fault's recovery allowance."""
GEO_COMMAND = "starquake run scenarios/geo/failover-under-partition.toml --seed 7"


def synthetic_run(run_dir: Path, messages: int, inject: dict[str, int] | None = None,
                  drain: bool = True) -> Path:
    run_dir.mkdir(parents=True)
    write_jsonl(SyntheticSpec(messages=messages, seed=3, inject=inject or {}, drain=drain),
                run_dir / "history.jsonl")
    return run_dir


def every_anomaly_run(run_dir: Path) -> Path:
    return synthetic_run(run_dir, 6000, {kind: 1 + n % 2 for n, kind in enumerate(INJECTABLE)})


def cut_short_run(run_dir: Path) -> Path:
    """A run killed mid-write: no drain, and half a JSON object as its last line."""
    synthetic_run(run_dir, 400, drain=False)
    with open(run_dir / "history.jsonl", "a") as history:
        history.write('{"index": 999999, "time": 99')
    return run_dir


def _layout(h: History, epoch: int, segments: dict[int, tuple[int, int, list[int], str]]) -> None:
    metadata = {"epoch": epoch, "nextSegmentId": max(segments) + 1, "properties": {},
                "segments": {str(s): {"segmentId": s, "hashRange": {"start": a, "end": b},
                                      "parentIds": parents, "childIds": [], "state": state}
                             for s, (a, b, parents, state) in segments.items()}}
    h.writer.record("observer", "ok", "layout", topic="T", epoch=epoch, detail=json.dumps(metadata))


def geo_run(run_dir: Path) -> Path:
    """Two clusters over 30 s: sends in a, read in a by a failover subscription `s` and in
    b by a shared subscription `geo` (replication lag); a partition, a kill and a session
    expiry, over (with the recovery after them) before the failover, which is judged; segment
    0 split at 10 s and its children merged at 24 s; `s` fails over to b at 22 s and gets
    values acked in a up to 600 ms earlier again (bound 100 ms)."""
    run_dir.mkdir(parents=True)
    (run_dir / "logs").mkdir()
    for node in ("a-broker-1", "a-bookie-1", "b-broker-1"):
        (run_dir / "logs" / f"{node}.log").write_text(f"{node} started\n")
    (run_dir / "command.txt").write_text(GEO_COMMAND + "\n")
    (run_dir / "scenario.toml").write_text(
        'name = "failover-under-partition"\nseed = 7\nexpected = "invalid"\n'
        'mutants = ["snapshot-never-taken"]\n')
    h = History(run_dir / "history.jsonl", scenario="failover-under-partition", seed=7,
                duplicate_window_bound_ms=GEO_BOUND_MS, mutants=["snapshot-never-taken"],
                snapshot_timeout_ms=GEO_SNAPSHOT_TIMEOUT_MS)
    _layout(h, 1, {0: (0, 65535, [], "ACTIVE")})
    h.subscribe("s", "failover", cluster="a")
    h.subscribe("geo", "shared", cluster="b")
    layout = {0: (0, 65535)}
    consumer_cluster = "a"
    producer = "p0"
    positions = {"a": {}, "b": {}}
    acked_before_failover: list[str] = []
    for i in range(300):
        now = i * 100.0
        h.at(max(now, h.now_ms))
        if now == 2000:
            h.nemesis("partition", targets=["a-broker-1"])
        elif now == 4000:
            h.nemesis("heal")
        elif now == 10000:
            h.op("admin", "split", invoke={"value": "0", "topic": "T"},
                 done={"epoch": 2, "topic": "T", "detail": {"children": [1, 2]}})
            _layout(h, 2, {0: (0, 65535, [], "SEALED"), 1: (0, 32767, [0], "ACTIVE"),
                           2: (32768, 65535, [0], "ACTIVE")})
            layout = {1: (0, 32767), 2: (32768, 65535)}
        elif now == 5000:
            h.nemesis("kill", targets=["a-bookie-1"])
        elif now == 7000:
            h.nemesis("start", targets=["a-bookie-1"])
        elif now == 9000:
            h.nemesis("expire-session", targets=["a-broker-1"])
        elif now == 22000:
            h.failover("s", "a", "b")
            consumer_cluster = "b"
            for value in acked_before_failover:  # the duplicates the snapshot should prevent
                h.recv(value, "s", cluster="b", position=positions["b"][value], process="c0")
        elif now == 24000:
            h.op("admin", "merge", invoke={"value": "1,2", "topic": "T"},
                 done={"epoch": 3, "topic": "T", "detail": {"merged": 3}})
            _layout(h, 3, {0: (0, 65535, [], "SEALED"), 1: (0, 32767, [0], "SEALED"),
                           2: (32768, 65535, [0], "SEALED"), 3: (0, 65535, [1, 2], "ACTIVE")})
            layout = {3: (0, 65535)}
        value, key = f"m{i}", f"k{i % 8}"
        segment = next(s for s, (a, b) in layout.items() if a <= key_hash(key) <= b)
        in_partition = 2000 <= now < 4000
        outcome = ("info" if i == 30 else "fail") if in_partition and i % 5 == 0 else "ok"
        positions["a"][value] = f"{segment}:{i}"
        positions["b"][value] = f"{100 + segment}:{i}"
        h.send(value, key=key, outcome=outcome, cluster="a", segment=segment,
               position=positions["a"][value] if outcome == "ok" else None, process=producer)
        if outcome == "info":
            producer = "p1"  # the process id is retired after info
        if outcome != "ok":
            continue
        h.recv(value, "s", cluster=consumer_cluster, segment=segment,
               position=positions[consumer_cluster][value], process="c0")
        h.ack(value, "s", cluster=consumer_cluster, process="c0")
        if 21400 <= now < 22000:
            acked_before_failover.append(value)
        h.at(h.now_ms + 50)
        h.recv(value, "geo", cluster="b", segment=segment, position=positions["b"][value],
               process="c1")
    h.at(30500)
    h.drain()
    h.close()
    return run_dir
