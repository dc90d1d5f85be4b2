"""The segment DAG of each scalable topic as it grew: every segment a box over the time it
was active and the hash range it owned, arrows from parents to children, splits and merges
marked when they completed. Read from `layout` observations and `split`/`merge` operations."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

from reports.figures import Omitted, Plot, PlotInput, data_uri, figure, shade_faults

MAX_TOPICS = 4
HASH_SPACE = 65536


@dataclass
class _Segment:
    start: int
    end: int
    parents: tuple[int, ...]
    created_t: float
    sealed_t: float | None = None


@dataclass
class _TopicDag:
    segments: dict[int, _Segment] = field(default_factory=dict)
    changes: list[tuple[float, str]] = field(default_factory=list)


def segment_dag(run: PlotInput) -> Plot | Omitted:
    view, faults = run.view, run.faults
    title = "Segment DAG"
    events = view.select(("layout", "split", "merge"))
    if events.empty:
        return Omitted(title, "the history has no layout, split or merge events")
    dags = _dags(events)
    dags = {topic: dag for topic, dag in dags.items() if dag.segments}
    if not dags:
        return Omitted(title, "no layout event names a segment with a hash range")
    topics = sorted(dags)[:MAX_TOPICS]
    fig, axes = figure(len(topics), height=3.4)
    end = view.duration_s
    for ax, topic in zip(axes, topics):
        _draw(ax, dags[topic], end)
        shade_faults(ax, faults, label=False)
        ax.set_title(topic, fontsize=9)
    axes[-1].set_xlabel("time since start (s)")
    caption = ("Each box is a segment over the time it was active (from the first layout or "
               "split/merge naming it to the split/merge or layout that sealed it) and the "
               "hash range it owned; arrows go from parent to child; dotted lines are "
               "completed splits and merges. Segments in the first observed layout are drawn "
               "from the run's start.")
    if len(topics) < len(dags):
        caption += f" Showing {len(topics)} of {len(dags)} topics."
    return Plot(title, caption, data_uri(fig))


def _dags(events: pd.DataFrame) -> dict[str, _TopicDag]:
    dags: dict[str, _TopicDag] = {}
    pending: dict[str, str] = {}  # process -> value of its outstanding split/merge invoke
    seen_layout: set[str] = set()
    event: Any  # a row of `HistoryView.select`, a named tuple of its columns
    for event in events.sort_values("index").itertuples(index=False):
        topic = event.topic if isinstance(event.topic, str) else "(no topic)"
        dag = dags.setdefault(topic, _TopicDag())
        if event.f == "layout" and event.type == "ok":
            t = 0.0 if topic not in seen_layout else event.t
            seen_layout.add(topic)
            _apply_layout(dag, _json(event.detail), t, event.t)
        elif event.type == "invoke":
            pending[event.process] = event.value
        elif event.type == "ok":
            detail = _json(event.detail)
            what = pending.pop(event.process, event.value)
            if event.f == "split":
                label = f"split {what} → {','.join(map(str, detail.get('children', [])))}"
            else:
                label = f"merge {what} → {detail.get('merged', '?')}"
            if isinstance(event.epoch, (int, float)) and not pd.isna(event.epoch):
                label += f" (epoch {int(event.epoch)})"
            dag.changes.append((event.t, label))
            _seal_parents(dag, what, event.t)
    return dags


def _apply_layout(dag: _TopicDag, layout: dict[str, Any], created_t: float,
                  seen_t: float) -> None:
    for key, info in (layout.get("segments") or {}).items():
        try:
            segment_id = int(info.get("segmentId", key))
            hash_range = info["hashRange"]
            start, end = int(hash_range["start"]), int(hash_range["end"])
        except (KeyError, TypeError, ValueError):
            continue
        segment = dag.segments.get(segment_id)
        if segment is None:
            segment = dag.segments[segment_id] = _Segment(
                start, end, tuple(info.get("parentIds") or ()), created_t)
        if info.get("state") == "SEALED" and segment.sealed_t is None:
            segment.sealed_t = seen_t


def _seal_parents(dag: _TopicDag, what: str, t: float) -> None:
    for part in str(what).split(","):
        segment = dag.segments.get(int(part)) if part.strip().isdigit() else None
        if segment is not None and (segment.sealed_t is None or segment.sealed_t > t):
            segment.sealed_t = t


def _draw(ax: Axes, dag: _TopicDag, end_t: float) -> None:
    for segment_id, segment in sorted(dag.segments.items()):
        right = segment.sealed_t if segment.sealed_t is not None else end_t
        sealed = segment.sealed_t is not None
        ax.add_patch(Rectangle((segment.created_t, segment.start),
                               max(right - segment.created_t, 0),
                               segment.end - segment.start + 1,
                               facecolor="#cfd8dc" if sealed else "#90caf9",
                               edgecolor="#37474f", lw=0.8))
        ax.text((segment.created_t + right) / 2, (segment.start + segment.end) / 2,
                f"{segment_id}", ha="center", va="center", fontsize=8)
        for parent_id in segment.parents:
            parent = dag.segments.get(parent_id)
            if parent is None:
                continue
            ax.annotate("", xy=(segment.created_t, (segment.start + segment.end) / 2),
                        xytext=(parent.sealed_t if parent.sealed_t is not None
                                else segment.created_t,
                                (parent.start + parent.end) / 2),
                        arrowprops={"arrowstyle": "->", "color": "#455a64", "lw": 0.8})
    for t, label in dag.changes:
        ax.axvline(t, color="#6a1b9a", ls=":", lw=1)
        ax.annotate(label, (t, 1), xycoords=("data", "axes fraction"), xytext=(2, -2),
                    textcoords="offset points", va="top", fontsize=7, color="#6a1b9a",
                    rotation=90)
    ax.set_xlim(0, max(end_t, 1e-6))
    ax.set_ylim(0, HASH_SPACE)
    ax.set_ylabel("key hash range")


def _json(text: object) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
