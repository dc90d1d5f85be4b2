"""Mixes (`checkers.mixes`): realistic histories whose anomalies have exactly the injected
counts. The process and layout rules, and that each knob shows, are checked on every mix
without Spark; every checker's count, on every mix clean and with each injectable anomaly
injected three times, as the runs of one Spark job."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace
from itertools import pairwise
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from checkers.anomaly import CheckSettings
from checkers.check import check_runs
from checkers.load import prepare
from checkers.mixes import MIXES, generate, scaled, write_parquet
from checkers.synthetic import INJECTABLE
from history.checker_registry import CHECKERS
from history.schema import ARROW_SCHEMA, DEFAULT_DUPLICATE_WINDOW_BOUND_MS, OBSERVATIONS, key_hash

SMALL = 30_000
INJECTED = dict.fromkeys(INJECTABLE, 3)

Event = dict[str, Any]


@pytest.fixture(scope="module")
def clean() -> dict[str, list[Event]]:
    return {name: generate(scaled(spec, SMALL), {}).to_pylist() for name, spec in MIXES.items()}


def _of(events: list[Event], f: str, **fields: Any) -> list[Event]:
    return [e for e in events if e["f"] == f and all(e[k] == v for k, v in fields.items())]


@pytest.mark.parametrize("name", MIXES)
def test_every_process_keeps_the_rules(clean: dict[str, list[Event]], name: str) -> None:
    """Index and time in order; each process alternates an invoke and its completion of
    the same `f`; a process that completed `info` never appears again."""
    events = clean[name]
    assert [e["index"] for e in events] == list(range(len(events)))
    assert all(a["time"] <= b["time"] for a, b in pairwise(events))
    pending: dict[str, str] = {}
    retired: set[str] = set()
    for e in events:
        assert e["process"] not in retired, e
        if e["f"] in OBSERVATIONS and e["type"] == "ok":
            continue
        if e["type"] == "invoke":
            assert e["process"] not in pending, e
            pending[e["process"]] = e["f"]
        else:
            assert pending.pop(e["process"]) == e["f"], e
            if e["type"] == "info":
                retired.add(e["process"])
    assert not pending


@pytest.mark.parametrize("name", MIXES)
def test_writes_follow_the_layouts(clean: dict[str, list[Event]], name: str) -> None:
    """Every key goes to the segment whose range holds its hash, and every write to a
    segment is invoked before any write to one of its descendants completes."""
    events = clean[name]
    segments: dict[int, dict[str, Any]] = {}
    for layout in _of(events, "layout"):
        segments.update({int(s): v for s, v in json.loads(layout["detail"])["segments"].items()})
    invoked = {e["value"]: e for e in _of(events, "send", type="invoke")}
    last_invoke: dict[int, int] = {}
    first_ok: dict[int, int] = {}
    for done in _of(events, "send", type="ok"):
        segment, key = segments[done["segment"]], invoked[done["value"]]["key"]
        assert segment["hashRange"]["start"] <= key_hash(key) <= segment["hashRange"]["end"]
        last_invoke[done["segment"]] = max(last_invoke.get(done["segment"], 0),
                                           invoked[done["value"]]["time"])
        first_ok.setdefault(done["segment"], done["time"])

    def ancestors(segment: int) -> set[int]:
        parents = set(segments[segment]["parentIds"])
        return parents.union(*(ancestors(p) for p in parents))

    pairs = [(a, d) for d in first_ok for a in ancestors(d) if a in last_invoke]
    assert pairs
    assert all(last_invoke[a] < first_ok[d] for a, d in pairs)


@pytest.mark.parametrize("name", MIXES)
def test_the_knobs_show(clean: dict[str, list[Event]], name: str) -> None:
    spec = scaled(MIXES[name], SMALL)
    events = clean[name]
    assert abs(len(events) - SMALL) < SMALL * 0.05
    live = _of(events, "recv", subscription="live")
    # Crashes and refused acks add redeliveries; a failover's snapshot lag adds first
    # deliveries in the other cluster.
    redelivered = sum(e["redelivery"] > 0 for e in live) / len(live)
    assert spec.redelivery - 0.01 <= redelivered < spec.redelivery + 0.03
    replacements = [e for e in _of(events, "subscribe", type="ok") if "replaces" in e["detail"]]
    assert 0 < len(replacements) <= spec.crashes
    # Every slot in both clusters, and each replacement, is a consumer of its own.
    assert len({e["consumer"] for e in live}) == 2 * spec.consumers + len(replacements)
    assert len(_of(events, "failover", type="ok")) == spec.failovers
    assert len(_of(events, "split", type="ok")) == spec.splits
    assert len(_of(events, "merge", type="ok")) == spec.merges
    assert len({e["f"] for e in events if e["process"] == "nemesis"}) >= 2
    sends = Counter(e["type"] for e in _of(events, "send") if e["type"] != "invoke")
    assert sends["fail"] and sends["info"]
    acks = Counter(e["detail"] for e in _of(events, "ack", type="ok"))
    assert acks[None] and acks['{"confirmed_by":"cursor"}'] and acks['{"cumulative":true}']
    drained = _of(events, "drain", type="ok")[0]["index"]
    finals = {(e["subscription"], e["cluster"]) for e in _of(events, "cursor")
              if e["index"] > drained}
    assert finals == {("live", "a"), ("live", "b"), ("audit", "b")}
    assert max(len(e["detail"] or "") for e in events) > 2000  # layouts


def test_many_keys_and_heavy_redelivery_differ_where_they_should(
        clean: dict[str, list[Event]]) -> None:
    keys = {name: len({e["key"] for e in _of(events, "send", type="invoke")})
            for name, events in clean.items()}
    assert keys["many-keys"] > 5 * keys["default"]
    many_keys = MIXES["many-keys"]
    assert many_keys.keys_per_producer * many_keys.producers >= 100_000
    assert MIXES["heavy-redelivery"].redelivery >= 0.3


def test_the_untuned_mix_differs_where_it_should(clean: dict[str, list[Event]]) -> None:
    """200 producers, each a client process; keys and values as long as asked, where the
    default's are short names; half of `audit`'s acks cumulative and none of `live`'s,
    which a key_shared subscription refuses."""
    untuned, events = MIXES["untuned"], clean["untuned"]
    assert untuned.producers == 200
    assert len({e["process"] for e in _of(events, "send")}) >= untuned.producers
    sends = _of(events, "send", type="invoke")
    assert {len(e["key"]) for e in sends} == {untuned.key_bytes}
    assert {len(e["value"]) for e in sends} == {untuned.value_bytes}
    assert max(len(e["key"]) + len(e["value"]) for e in
               _of(clean["default"], "send", type="invoke")) < 20
    acks = _of(events, "ack", type="invoke")
    cumulative = Counter(e["subscription"] for e in acks if e["detail"] == '{"cumulative":true}')
    assert cumulative["live"] == 0
    audit_acks = sum(e["subscription"] == "audit" for e in acks)
    assert abs(cumulative["audit"] / audit_acks - untuned.cumulative_share) < 0.05


def test_long_values_pad_the_short_ones() -> None:
    """Each long value, injected ones too, is its short text, `_` and letters up to the
    asked length: one-to-one with the short texts, so as unique; the rest of the history
    is the same."""
    spec = scaled(MIXES["default"], 5_000)
    inject = {"unexpected": 2, "order": 2}
    short = generate(spec, inject)
    padded = generate(replace(spec, value_bytes=70), inject)
    assert padded.drop_columns(["value"]).equals(short.drop_columns(["value"]))
    messages = pc.is_in(short["f"], pa.array(["send", "recv", "ack"]))
    pairs = set(zip(short.filter(messages)["value"].to_pylist(),
                    padded.filter(messages)["value"].to_pylist(), strict=True))
    assert all(long.startswith(f"{name}_") and len(long) == 70 for name, long in pairs)
    assert len(pairs) == len({name for name, _ in pairs}) == len({long for _, long in pairs})
    assert sum(name.startswith("u") for name, _ in pairs) == 2


def test_long_keys_pad_the_short_ones() -> None:
    """Each long key, `order`'s fresh ones too, is a short name `k{n}`, `_` and letters up
    to the asked length, no two of one name. (Their hashes route the sends:
    test_writes_follow_the_layouts, and the injected counts in the Spark tests.)"""
    spec = MIXES["default"]
    keys = pc.unique(generate(replace(scaled(spec, 5_000), key_bytes=40),
                              {"order": 2})["key"].drop_null()).to_pylist()
    names = [key.split("_")[0] for key in keys]
    assert all(re.fullmatch(r"k[0-9]+_[a-z2-7]+", key) and len(key) == 40 for key in keys)
    assert len(set(names)) == len(keys) > spec.keys_per_producer
    planned = spec.producers * spec.keys_per_producer
    assert max(int(name[1:]) for name in names) >= planned  # `order`'s


def test_long_values_do_not_compress_to_nothing() -> None:
    """Their letters are random, five bits a byte, where a constant padding would cost
    Parquet nothing."""
    values = generate(replace(scaled(MIXES["default"], 5_000), value_bytes=200), {}
                      ).select(["value"])
    sink = pa.BufferOutputStream()
    pq.write_table(values, sink, compression="zstd")
    assert sink.getvalue().size > 0.5 * 200 * pc.count_distinct(values["value"]).as_py()


def test_one_spec_gives_one_history() -> None:
    spec = scaled(MIXES["default"], 5_000)
    first = generate(spec, {"lost": 1})
    assert first.schema == ARROW_SCHEMA
    assert first.equals(generate(spec, {"lost": 1}))


def test_too_small_a_history_for_the_injections_is_refused() -> None:
    with pytest.raises(ValueError, match="too few events to inject 200 order"):
        generate(scaled(MIXES["default"], 3_000), {"order": 200})
    with pytest.raises(ValueError, match="cannot inject"):
        generate(scaled(MIXES["default"], 3_000), {"lots": 1})
    with pytest.raises(ValueError, match="cannot be negative"):
        generate(replace(scaled(MIXES["default"], 3_000), key_bytes=-1), {})


@pytest.fixture(scope="module")
def checked(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    directory = tmp_path_factory.mktemp("mixes")
    histories = {}
    for name, spec in MIXES.items():
        for label, inject in (("clean", {}), ("injected", INJECTED)):
            path = directory / f"{name}-{label}.parquet"
            write_parquet(scaled(spec, SMALL), inject, path)
            histories[f"{name}-{label}"] = prepare(path)
    return {r.run: r.results for r in check_runs(spark, histories, CheckSettings())}


@pytest.mark.spark
@pytest.mark.parametrize("label", ["clean", "injected"])
@pytest.mark.parametrize("name", MIXES)
def test_every_checker_counts_exactly_what_was_injected(
        checked: dict[str, dict[str, Any]], name: str, label: str) -> None:
    results = checked[f"{name}-{label}"]
    injected = INJECTED if label == "injected" else {}
    counts = {checker: result["count"] for checker, result in results["checkers"].items()}
    # The optional checkers (`unavailable`, `zombie-broker`) judge only runs that set their
    # bounds; none do here.
    assert counts == {c.name: injected.get(c.name, 0) for c in CHECKERS if not c.optional}
    assert results["valid"] is (label == "clean")


@pytest.mark.spark
@pytest.mark.parametrize("name", MIXES)
def test_failovers_redeliver_within_the_bound(checked: dict[str, dict[str, Any]],
                                              name: str) -> None:
    """The clean runs' failovers do redeliver what was acknowledged just before them:
    `duplicate-window` judges real windows, each within the bound."""
    stats = checked[f"{name}-clean"]["stats"]
    assert stats["failovers"] == MIXES[name].failovers
    windows = stats["failover_windows"]
    assert windows
    assert all(0 < w["window_ms"] <= DEFAULT_DUPLICATE_WINDOW_BOUND_MS for w in windows)
    assert checked[f"{name}-clean"]["checkers"]["duplicate-window"]["acks_judged"] > 0
