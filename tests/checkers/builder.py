"""Hand-written histories for checker tests, recorded through the harness's own writer with
a clock the test sets, so each case reads like the run it stands for."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from checkers.load import PreparedHistory, prepare
from history.writer import HistoryWriter

MS = 1_000_000


class History:
    """A history under construction; times are in milliseconds since the start."""

    def __init__(self, path: Path, **meta: Any) -> None:
        self.now_ms = 0.0
        self.writer = HistoryWriter(path, clock=lambda: int(self.now_ms * MS))
        if meta:
            self.writer.record("harness", "ok", "meta", detail=meta)

    def at(self, ms: float) -> History:
        self.now_ms = ms
        return self

    def op(self, process: str, f: str, outcome: str = "ok", invoke: dict | None = None,
           done: dict | None = None) -> tuple[int, int]:
        self.now_ms += 1
        first = self.writer.record(process, "invoke", f, **(invoke or {}))
        self.now_ms += 1
        return first, self.writer.record(process, outcome, f, **(done or {}))

    def subscribe(self, sub: str, mode: str, topic: str = "T", cluster: str = "a",
                  process: str = "admin") -> None:
        fields = {"value": sub, "subscription": sub, "topic": topic, "cluster": cluster}
        self.op(process, "subscribe", invoke={**fields, "detail": {"mode": mode}}, done=fields)

    def send(self, value: str, *, key: str = "k", outcome: str = "ok", topic: str = "T",
             cluster: str = "a", position: str | None = None, segment: int | None = None,
             process: str = "p0") -> tuple[int, int]:
        return self.op(process, "send", outcome,
                       invoke={"value": value, "key": key, "topic": topic, "cluster": cluster},
                       done={"position": position, "segment": segment})

    def recv(self, value: str, sub: str = "s", *, topic: str = "T", cluster: str = "a",
             position: str | None = None, segment: int | None = None,
             process: str = "c0") -> int:
        self.now_ms += 1
        return self.writer.record(process, "ok", "recv", value=value, subscription=sub,
                                  topic=topic, cluster=cluster, position=position,
                                  segment=segment, consumer=process)

    def ack(self, value: str, sub: str = "s", *, cumulative: bool = False, outcome: str = "ok",
            topic: str = "T", cluster: str = "a", process: str = "c0",
            position: str | None = None) -> tuple[int, int]:
        fields = {"value": value, "subscription": sub, "topic": topic, "cluster": cluster,
                  "position": position}
        if cumulative:
            fields["detail"] = {"cumulative": True}
        return self.op(process, "ack", outcome, invoke=fields)

    def failover(self, sub: str, source: str, target: str, process: str = "c0") -> None:
        self.op(process, "failover", invoke={"value": sub, "subscription": sub},
                done={"detail": {"from": source, "to": target}})

    def layout(self, topic: str, segments: dict[int, tuple[int, int, list[int]]]) -> None:
        metadata = {"epoch": 1, "nextSegmentId": max(segments) + 1, "properties": {},
                    "segments": {str(s): {"segmentId": s, "hashRange": {"start": a, "end": b},
                                          "parentIds": parents, "childIds": [],
                                          "state": "ACTIVE"}
                                 for s, (a, b, parents) in segments.items()}}
        self.writer.record("observer", "ok", "layout", topic=topic, epoch=1,
                           detail=json.dumps(metadata))

    def cursor(self, sub: str = "s", mark_delete: str | None = None, *, backlog: int = 0,
               consumers: int = 1, unacked: int = 0, ranges: list[list[str]] | None = None,
               topic: str = "T", cluster: str = "a") -> int:
        """A `cursor` observation: the subscription's cursor as an admin read saw it."""
        self.now_ms += 1
        return self.writer.record(
            "observer", "ok", "cursor", value=sub, subscription=sub, topic=topic,
            cluster=cluster, position=mark_delete,
            detail={"individually_deleted": ranges or [], "backlog": backlog,
                    "consumers": consumers, "unacked": unacked})

    def segment_cursor(self, sub: str, segments: dict[str, dict[str, Any]], *,
                       topic: str = "T", cluster: str = "a") -> int:
        """A scalable topic's `cursor` observation: one subscription over its segments,
        the counts summed (as harness/workloads/segment_cursors.py records them)."""
        self.now_ms += 1
        totals = {count: sum(int(figures[count]) for figures in segments.values())
                  for count in ("backlog", "consumers", "unacked")}
        return self.writer.record("observer", "ok", "cursor", value=sub, subscription=sub,
                                  topic=topic, cluster=cluster,
                                  detail={**totals, "segments": segments})

    def health(self, broker: str, answer: str, cluster: str = "a") -> int:
        """A `health` observation: what `broker`'s health check answered the probe."""
        self.now_ms += 1
        return self.writer.record("observer", "ok", "health", value=broker, cluster=cluster,
                                  detail={"broker": broker, "answer": answer})

    # A scalable stream consumer's session with its controller, under process `r-<name>`.

    def registering(self, consumer: str, sub: str = "s") -> None:
        self.now_ms += 1
        self.writer.record(f"r-{consumer}", "invoke", "register",
                           **_session_fields(consumer, sub))

    def registered(self, consumer: str, segments: list[int], sub: str = "s",
                   epoch: int = 1) -> None:
        self.now_ms += 1
        self.writer.record(f"r-{consumer}", "ok", "register", epoch=epoch,
                           detail={"segments": segments}, **_session_fields(consumer, sub))

    def register(self, consumer: str, segments: list[int], sub: str = "s") -> None:
        self.registering(consumer, sub)
        self.registered(consumer, segments, sub)

    def assign(self, consumer: str, segments: list[int], sub: str = "s",
               epoch: int = 1) -> None:
        """An assignment the controller pushed, dealt for the layout of `epoch`."""
        self.now_ms += 1
        self.writer.record(f"r-{consumer}", "ok", "assign", epoch=epoch,
                           detail={"segments": segments}, **_session_fields(consumer, sub))

    def unregister(self, consumer: str, sub: str = "s") -> None:
        fields = _session_fields(consumer, sub)
        self.op(f"r-{consumer}", "unregister", invoke=fields, done=fields)

    def nemesis(self, f: str, **detail: Any) -> None:
        self.op("nemesis", f, invoke={"value": f}, done={"detail": detail})

    def drain(self, outcome: str = "ok") -> None:
        self.op("harness", "drain", outcome, invoke={"value": "T"})

    def close(self) -> Path:
        self.writer.close()
        return self.writer.path


def _session_fields(consumer: str, sub: str) -> dict[str, str]:
    return {"value": consumer, "consumer": consumer, "subscription": sub,
            "topic": "topic://t/ns/T", "cluster": "a"}


def prepared_cases(builds: Mapping[str, Callable[[History], None]], root: Path,
                   meta: Mapping[str, dict[str, Any]] | None = None
                   ) -> dict[str, PreparedHistory]:
    """Each case's history, named by its case and seed 1, built in a run directory of its
    own under `root` (its `meta` fields added) and prepared for checking."""
    histories = {}
    for name, build in builds.items():
        (root / name).mkdir()
        history = History(root / name / "history.jsonl", scenario=name, seed=1,
                          **(meta or {}).get(name, {}))
        build(history)
        histories[name] = prepare(history.close())
    return histories
