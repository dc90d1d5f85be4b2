"""Runs of the `scalable` workload on local processes, from the short mutants suite
(tests/run/conftest.py): the controller mutants that leave parents writable
(`skip-terminate`, seen once a producer learns of layouts late) or children without
cursors (`child-cursor-at-latest`) are caught, and so are the coordinator's that hands out
children early (`children-before-parent-drained`) once the consumers lag, and an admin API
whose ranges disagree with the DAG at the segments' first hashes
(`admin-range-start-exclusive`), which only the edge keys reach; a controller leader that
forgets its predecessor's half-done change (`no-roll-forward`) leaves keys unwritable
for longer than the scenario's bound, and one that forgets the consumers' sessions
(`no-grace-period`) moves segments between them. (A valid scalable run,
with the history contract of a scalable topic, is in test_smoke_suite.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from history.schema import key_hash
from tests.run.suite_runs import SuiteRuns
from tests.run.test_run_local import _events, _never_received

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]


def _made_segments(events: list[dict]) -> set[int]:
    """The segments a split or merge made, by the last layout the observer recorded."""
    final = max((e for e in events if e["f"] == "layout"), key=lambda e: e["epoch"])
    return {int(s) for s, segment in json.loads(final["detail"])["segments"].items()
            if segment["parentIds"]}


def _the_only_finding(run_dir: Path, checker: str) -> dict:
    """The run's result for `checker`, which found something, and no other checker did."""
    results = json.loads((run_dir / "results.json").read_text())
    found = results["checkers"][checker]
    assert results["valid"] is False and found["count"] > 0
    assert {c for c, r in results["checkers"].items() if r["valid"] is False} == {checker}
    return found


def _first_leader_kill(events: list[dict]) -> dict:
    """The completion of the nemesis's first kill of the controller's leader."""
    return next(e for e in events if e["f"] == "kill-leader" and e["type"] == "ok")


def _stored_in(events: list[dict]) -> dict[str, int]:
    """Each acknowledged value -> the segment that stored it."""
    return {e["value"]: e["segment"] for e in events if e["f"] == "send" and e["type"] == "ok"}


def test_a_producer_late_to_learn_of_a_split_writes_to_parents_left_writable(
        mutants_suite: SuiteRuns) -> None:
    """`skip-terminate`: a split or merge never terminates its parents. The second producer
    acts on each new layout a second after the first (`layout_lag_ms`), and its writes to
    the parents, which a terminated parent would refuse, are accepted after the first
    producer wrote to their children: `dual-write`, every one a send of the late producer
    to a sealed segment. No parent ever reaches its end, so the stream consumers, which
    must finish a parent before they get its children, read the initial segments only; the
    drain gives up with the backlog in the stream subscription on later segments, and
    nothing can be judged lost. Without the lag the same mutant's run is only `unknown`
    (docs/detection.md); with the lag and no mutant, valid (the detection table's twin)."""
    run_dir = mutants_suite.run("scalable-skip-terminate")
    results = json.loads((run_dir / "results.json").read_text())
    assert results["checkers"]["lost"]["valid"] == "unknown"
    assert results["checkers"]["misrouted"]["valid"] is True
    dual_writes = results["checkers"]["dual-write"]
    assert dual_writes["count"] > 0
    events = _events(run_dir)
    final = max((e for e in events if e["f"] == "layout"), key=lambda e: e["epoch"])
    sealed = {int(s) for s, segment in json.loads(final["detail"])["segments"].items()
              if segment["childIds"]}
    stored = _stored_in(events)
    for example in dual_writes["examples"]:
        assert example["value"].startswith("w1-") and stored[example["value"]] in sealed
    initial = {int(s) for s, segment in json.loads(final["detail"])["segments"].items()
               if not segment["parentIds"]}
    read = {sub: {e["segment"] for e in events if e["f"] == "recv" and e["subscription"] == sub}
            for sub in ("stream", "queue")}
    assert read["stream"] == initial and read["queue"] > initial

    (gave_up,) = [e for e in events if e["f"] == "drain" and e["type"] != "invoke"]
    assert gave_up["type"] == "info"
    left = [name.split("/") for name, n in json.loads(gave_up["detail"])["backlogs"].items()
            if n]
    assert left and all(sub == "stream" and int(segment) not in initial
                        for segment, sub in left)


def test_children_without_cursors_lose_what_they_took_before_the_consumers_came(
        mutants_suite: SuiteRuns) -> None:
    """`child-cursor-at-latest`: a child's cursors are made by the consumers when they
    attach, at Latest, after the producers already wrote to it; what it took in between is
    never delivered. The drain completes (nothing is left unacknowledged), so the loss is
    proven: every lost value was stored in a segment a split or merge made. Both
    subscriptions lose (a queue consumer, too, attaches to a child only after it learns the
    new layout); the stream one must be among them, and `lost` counts exactly the values
    each subscription never received."""
    run_dir = mutants_suite.run("scalable-child-cursor-at-latest")
    checkers = json.loads((run_dir / "results.json").read_text())["checkers"]
    assert all(checkers[name]["valid"] is True for name in ("dual-write", "misrouted", "order"))
    events = _events(run_dir)
    made, stored = _made_segments(events), _stored_in(events)
    missed = {sub: _never_received(events, sub) for sub in ("stream", "queue")}
    assert missed["stream"]
    assert checkers["lost"]["count"] == sum(len(values) for values in missed.values())
    assert all(stored[value] in made for values in missed.values() for value in values)
    for example in checkers["lost"]["examples"]:
        assert example["value"] in missed[example["subscription"]]


def test_lagging_consumers_show_children_handed_out_before_their_parents_drain(
        mutants_suite: SuiteRuns) -> None:
    """`children-before-parent-drained`, with consumers slower than the producers
    (`process_ms`): a split or merge finds its parents with unread messages, and a stream
    consumer given the children at once reads a key's newer messages before its older
    ones: `order`, nothing lost. That the lag alone reorders nothing is the detection
    table's twin."""
    run_dir = mutants_suite.run("scalable-children-before-parent-drained")
    checkers = json.loads((run_dir / "results.json").read_text())["checkers"]
    assert checkers["order"]["count"] > 0
    assert all(checkers[name]["valid"] is True for name in ("lost", "dual-write", "misrouted"))
    events = _events(run_dir)
    made, stored = _made_segments(events), _stored_in(events)
    for example in checkers["order"]["examples"]:
        # The newer message came first, from a child; the older one was on an ancestor.
        assert example["subscription"] == "stream"
        assert stored[example["later"]] in made
        assert stored[example["earlier"]] != stored[example["later"]]


def test_edge_keys_find_an_admin_api_whose_ranges_start_one_past_the_dag(
        mutants_suite: SuiteRuns) -> None:
    """`admin-range-start-exclusive`: the admin API gives each segment's range starting one
    past its first hash, the DAG the client routes by does not. Only a key hashing onto a
    segment's first hash is stored outside the range the admin API gives; the edge keys
    hit every boundary, so `misrouted` counts exactly those sends and nothing else is
    wrong. With the edge keys off, the same mutant passes unseen (docs/detection.md)."""
    run_dir = mutants_suite.run("scalable-admin-range-start-exclusive")
    checkers = json.loads((run_dir / "results.json").read_text())["checkers"]
    assert [name for name, result in checkers.items() if not result["valid"]] == ["misrouted"]
    events = _events(run_dir)
    starts = {int(s): segment["hashRange"]["start"]
              for e in events if e["f"] == "layout"
              for s, segment in json.loads(e["detail"])["segments"].items()}
    sends = [e for e in events if e["f"] == "send" and e["type"] == "ok"]
    onto_a_first_hash = [e for e in sends if key_hash(e["key"]) == starts[e["segment"]] - 1]
    assert checkers["misrouted"]["count"] == len(onto_a_first_hash) > 0
    for example in checkers["misrouted"]["examples"]:
        assert example["hash"] == example["range_start"] - 1
    # Every edge of the initial two segments was hit, not only the ones that show the bug.
    assert {0, 0x7FFF, 0x8000, 0xFFFF} <= {key_hash(e["key"]) for e in sends}


def test_a_change_the_next_leader_forgets_leaves_its_keys_unwritable(
        mutants_suite: SuiteRuns) -> None:
    """`no-roll-forward`: the leader is killed between terminating the parents and writing
    the layout, and its successor forgets the change. Nothing acknowledged is lost; the
    keys of the parents' range take no write again, so their sends wait past the bound
    (`unavailable`) until the load ends, with no success to end the wait."""
    run_dir = mutants_suite.run("scalable-no-roll-forward")
    unavailable = _the_only_finding(run_dir, "unavailable")
    killed = _first_leader_kill(_events(run_dir))
    examples = unavailable["examples"]
    assert all(e["written"] is False and e["wait_ms"] > e["bound_ms"] == 20000 for e in examples)
    # The parents were terminated before the leader died: the first wait began then.
    assert min(e["from_ms"] for e in examples) < killed["time"] / 1e6


def test_a_controller_that_forgets_sessions_moves_segments_between_consumers(
        mutants_suite: SuiteRuns) -> None:
    """`no-grace-period`: each new controller leader evicts the sessions it restores, so
    the first stream consumer to register again is dealt every segment and gives the
    other's back when it registers. Nothing is lost, reordered or delivered twice: the
    one finding is `reassigned`, every example a consumer of `stream` whose segments
    moved after the controller's leader was killed."""
    run_dir = mutants_suite.run("scalable-no-grace-period")
    reassigned = _the_only_finding(run_dir, "reassigned")
    events = _events(run_dir)
    first_kill = _first_leader_kill(events)
    consumers = {e["consumer"] for e in events if e["f"] == "register"}
    for example in reassigned["examples"]:
        assert example["subscription"] == "stream" and example["consumer"] in consumers
        assert example["before"] != example["after"]
        assert example["events"][1] > first_kill["index"]
