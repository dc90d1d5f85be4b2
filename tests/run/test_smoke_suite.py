"""The smoke suite as a user's CI runs it, through the pytest plugin with the commands of
examples/ci/: every scenario of `scenarios/smoke` (containers and local processes, each
kind of workload) is one pytest item that passes with seed 1, pytest's JUnit file has a
passing case per scenario with its run's verdict, and `starquake suite-index` makes the
index and starquake's JUnit file from the runs.
The same runs then answer for each backend and workload what one run of it must show:
kills on local processes, partitions and a session expiry in containers with nothing left
on the engine, failovers between two clusters, a tenant migration's five steps, a
scalable topic's history contract under splits, merges and faults, and a replay of a run
from its directory."""

from __future__ import annotations

import itertools
import json
import re
import shlex
import subprocess
import xml.etree.ElementTree as ET

import pytest

from history.version import starquake_version
from scenarios.catalogue import resolve_suite
from tests.run.suite_runs import REPO, STARQUAKE, PluginSuiteRuns
from tests.run.test_run_local import _events, assert_replayed

SMOKE = {path.stem for path in resolve_suite("smoke")}

pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> PluginSuiteRuns:
    return PluginSuiteRuns(tmp_path_factory.mktemp("smoke") / "runs", "smoke", timeout_s=1500)


def test_every_smoke_scenario_passes_and_junit_has_a_passing_case_for_each(
        smoke: PluginSuiteRuns) -> None:
    assert smoke.done.returncode == 0, smoke.outcome()
    assert smoke.passed == dict.fromkeys(SMOKE, True)
    for case in ET.parse(smoke.pytest_junit_file).getroot().iter("testcase"):
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert (properties["verdict"], properties["seed"], properties["starquake_version"]
                ) == ("valid", "1", starquake_version()), case.get("name")
    assert smoke.indexed.returncode == 0, smoke.indexed.stdout + smoke.indexed.stderr
    junit = smoke.junit()
    assert (junit.get("tests"), junit.get("failures"), junit.get("errors")) == (
        str(len(SMOKE)), "0", "0")
    cases = {case.get("classname"): case for case in junit.iter("testcase")}
    assert set(cases) == {f"starquake.{name}" for name in SMOKE}
    assert all(case.find("failure") is None for case in cases.values())
    for name in SMOKE:
        results = json.loads((smoke.run(name) / "results.json").read_text())
        assert results["valid"] is True and results["seed"] == 1, name
        # The suite runs in one process, whose official client keeps the first logger it
        # is given: each run's client log must still be in its own directory.
        assert (smoke.run(name) / "logs" / "client.log").stat().st_size > 0, name
    index = (smoke.top / "index.html").read_text()
    assert all(name in index for name in SMOKE)


def test_a_run_under_broker_kills_is_valid_complete_and_replayed(smoke: PluginSuiteRuns) -> None:
    run_dir = smoke.run("topic-kill")
    assert run_dir.name.endswith("-1")
    for name in ("scenario.toml", "command.txt", "history.jsonl", "history.parquet",
                 "results.json", "report.html"):
        assert (run_dir / name).is_file(), name
    logs = {p.name for p in (run_dir / "logs").iterdir()}
    assert logs >= {"a-zk1.log", "a-bookie1.log", "a-broker1.log", "a-broker2.log",
                    "a-broker3.log", "client.log"}
    assert shlex.split((run_dir / "command.txt").read_text()) == [
        "starquake", "reproduce", str(run_dir)]

    results = json.loads((run_dir / "results.json").read_text())
    assert results["stats"]["sends_ok"] > 200
    events = _events(run_dir)
    assert events[0]["f"] == "meta"
    meta = json.loads(events[0]["detail"])
    assert (meta["seed"], meta["snapshot_timeout_ms"]) == (1, 30_000)  # the topology's default
    first_send = next(e["index"] for e in events if e["f"] == "send")
    subscribed = {e["subscription"] for e in events[:first_send]
                  if e["f"] == "subscribe" and e["type"] == "ok"}
    assert subscribed == {"live", "late"}
    nemesis = [(e["type"], e["f"]) for e in events if e["process"] == "nemesis"]
    assert ("ok", "kill") in nemesis and ("ok", "start") in nemesis
    assert [e["type"] for e in events if e["f"] == "drain"] == ["invoke", "ok"]
    # The official client gives no ack receipt: the subscription's cursor confirms them,
    # so `duplicate` judges the run.
    confirmed = [e for e in events if e["f"] == "ack" and e["type"] == "ok"]
    assert confirmed and all(json.loads(e["detail"]) == {"confirmed_by": "cursor"}
                             for e in confirmed)
    assert {e["subscription"] for e in events if e["f"] == "cursor"} == {"live", "late"}
    assert results["checkers"]["duplicate"]["acks_judged"] == len(confirmed)

    again = subprocess.run([*STARQUAKE, "reproduce", str(run_dir)], cwd=REPO,
                           capture_output=True, text=True, timeout=400, check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    (replay,) = set((smoke.top / "topic-kill").iterdir()) - {run_dir}
    assert_replayed(events, _events(replay))


def test_partitions_and_a_session_expiry_in_containers_leave_nothing_behind(
        smoke: PluginSuiteRuns) -> None:
    """Seed 1 of topic-faults isolates the topic's owner and expires a broker's session."""
    run_dir = smoke.run("topic-faults")
    nemesis = {(e["f"], e["type"]): e for e in _events(run_dir) if e["process"] == "nemesis"}
    partition = json.loads(nemesis[("partition", "ok")]["detail"])
    (isolated,) = partition["targets"]
    assert isolated.startswith("a-broker")
    assert partition["grudge"][isolated] == sorted(
        ["a-zk1", "a-bookie1", *{"a-broker1", "a-broker2", "a-broker3"} - {isolated}])
    expired = json.loads(nemesis[("expire-session", "ok")]["detail"])
    assert list(expired["sessions"]) == expired["targets"]
    assert ("heal", "ok") in nemesis
    assert {p.name for p in (run_dir / "logs").iterdir()} >= {"a-broker1.log", "a-zk1.log"}
    run_ids = re.findall(r"containers labelled starquake=(\S+)", smoke.done.stdout)
    assert len(run_ids) == 4, "one per scenario in containers"
    for run_id in run_ids:
        left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=starquake={run_id}"],
                              capture_output=True, text=True, check=True).stdout
        assert left.strip() == "", run_id


def test_a_replicated_subscription_fails_over_back_and_forth_and_every_message_replicates(
        smoke: PluginSuiteRuns) -> None:
    run_dir = smoke.run("geo-failover")
    events = _events(run_dir)
    failovers = [json.loads(e["detail"]) for e in events
                 if e["f"] == "failover" and e["type"] == "ok"]
    # The consumers moved a -> b -> a ..., each failover starting where the last ended.
    assert len(failovers) >= 2 and failovers[0] == {"from": "a", "to": "b"}
    assert all(earlier["to"] == later["from"] != later["to"]
               for earlier, later in itertools.pairwise(failovers))
    sent = {e["value"]: e["cluster"] for e in events if e["f"] == "send" and e["type"] == "ok"}
    assert set(sent.values()) == {"a", "b"} and len(sent) > 300
    received: dict[str, set[str]] = {}
    for e in events:
        if e["f"] == "recv":
            received.setdefault(e["subscription"], set()).add(e["value"])
    # Every message reached both clusters, and the live subscription was read in both.
    assert received["late-a"] >= set(sent) and received["late-b"] >= set(sent)
    assert {e["cluster"] for e in events if e["f"] == "recv" and e["subscription"] == "live"
            } == {"a", "b"}
    assert ("ok", "cut-wan") in {(e["type"], e["f"]) for e in events
                                 if e["process"] == "nemesis"}
    assert {"a-broker1.log", "b-broker1.log", "client.log"} <= {
        p.name for p in (run_dir / "logs").iterdir()}


def test_a_tenant_migrates_in_five_steps_while_its_clients_go_on(smoke: PluginSuiteRuns) -> None:
    run_dir = smoke.run("tenant-migration")
    events = _events(run_dir)
    steps = [(e["value"], e["type"]) for e in events if e["f"] == "migrate"]
    assert steps == [(step, kind) for step in ("metadata", "data", "consumption progress",
                                               "switch", "clean up")
                     for kind in ("invoke", "ok")]
    # The clients went on writing and reading after the switch (the source's tenant is
    # deleted by then), and the tenant's lookups went through the lookup service.
    switched = next(e["index"] for e in events if e["f"] == "migrate" and e["type"] == "ok"
                    and e["value"] == "switch")
    assert any(e["f"] == "send" and e["type"] == "ok" for e in events[switched:])
    assert any(e["f"] == "recv" for e in events[switched:])
    assert (run_dir / "logs" / "lookup.log").is_file()


def test_splits_and_merges_under_faults_keep_the_scalable_topics_history_contract(
        smoke: PluginSuiteRuns) -> None:
    """Seed 1 of scalable-split-partition pauses the owner twice and kills a broker."""
    run_dir = smoke.run("scalable-split-partition")
    assert (run_dir / "logs" / "client.log").is_file()
    events = _events(run_dir)
    topic = "topic://public/default/scalable-split-partition"

    first_send = next(e["index"] for e in events if e["f"] == "send")
    modes = {e["subscription"]: json.loads(e["detail"])["mode"] for e in events[:first_send]
             if e["f"] == "subscribe" and e["type"] == "ok"}
    assert modes == {"stream": "stream", "queue": "queue"}

    # A change sent while its broker dies ends `info` (it may have happened): under the
    # kill not every split or merge completes `ok`, but some must, and each with its epoch.
    changes = [e for e in events if e["process"] == "admin" and e["type"] == "ok"]
    assert changes and {e["f"] for e in changes} <= {"split", "merge"}
    for change in changes:
        detail = json.loads(change["detail"])
        assert len(detail["children"]) == 2 if change["f"] == "split" else "merged" in detail
    layouts = {e["epoch"]: json.loads(e["detail"]) for e in events if e["f"] == "layout"}
    assert {e["epoch"] for e in changes} <= set(layouts)
    assert all(e["topic"] == topic for e in events if e["f"] == "layout")

    sends = [e for e in events if e["f"] == "send" and e["type"] == "ok"]
    assert len(sends) > 300
    final = layouts[max(layouts)]["segments"]
    written = {e["segment"] for e in sends}
    assert len(written) >= 3 and written <= {int(s) for s in final}
    assert all(e["position"] and e["epoch"] is not None for e in sends)
    recvs = {(e["subscription"], e["value"]) for e in events if e["f"] == "recv"}
    assert {v for s, v in recvs if s == "stream"} == {v for s, v in recvs if s == "queue"}
    assert any(e["f"] == "ack" and e["type"] == "ok" for e in events)
    # Each ack names the position it acknowledges, so `duplicate` can tell a producer's
    # resend (another stored copy) from a copy delivered again.
    delivered_at = {(e["subscription"], e["value"], e["position"])
                    for e in events if e["f"] == "recv"}
    acks = [e for e in events if e["f"] == "ack"]
    assert all((e["subscription"], e["value"], e["position"]) in delivered_at for e in acks)

    nemesis = [(e["type"], e["f"]) for e in events if e["process"] == "nemesis"]
    assert ("ok", "kill") in nemesis and ("ok", "start") in nemesis
    assert [e["type"] for e in events if e["f"] == "drain"] == ["invoke", "ok"]
