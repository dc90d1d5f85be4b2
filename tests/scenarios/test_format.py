"""Scenario files load with defaults filled in, and every mistake is named precisely."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from nemesis.faults import FAULT_NAMES as FAULTS
from scenarios.format import ScenarioError, load_scenario

REPO = Path(__file__).resolve().parents[2]


def _scenario(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


def test_catalogue_scenarios_are_valid() -> None:
    for path in sorted((REPO / "scenarios").rglob("*.toml")):
        scenario = load_scenario(path)
        assert scenario.name and scenario.expected in ("valid", "invalid", "unknown")


def test_every_mutant_scenario_names_its_mutant_and_the_anomaly_it_causes() -> None:
    """A catch counts only through the anomaly the scenario is about; `unknown` is no
    catch at all."""
    for path in sorted((REPO / "scenarios/mutants").glob("*.toml")):
        scenario = load_scenario(path)
        assert scenario.mutants, path
        if scenario.expected == "invalid":
            assert scenario.expected_anomalies, path


def test_every_mutant_has_a_scenario_that_turns_it_on() -> None:
    """A mutant no scenario runs is one no run has shown a checker catches."""
    from impl.mutants import CATALOGUE

    turned_on = {mutant for path in (REPO / "scenarios/mutants").glob("*.toml")
                 for mutant in load_scenario(path).mutants}
    assert set(CATALOGUE) - turned_on == set()


def test_defaults_fill_what_is_left_out(tmp_path: Path) -> None:
    scenario = load_scenario(_scenario(tmp_path, 'duration_s = 5\n[topology]\nbrokers = 1\n'))
    assert scenario.name == "s"
    assert scenario.topology.brokers == 1 and scenario.topology.bookies == 1
    assert scenario.topology.session_expired_policy == "reconnect"
    assert scenario.nemesis.schedule == "none" and scenario.expected == "valid"


def test_consumer_crashes_are_off_unless_a_topic_scenario_asks(tmp_path: Path) -> None:
    topic = '[workload]\nkind = "topic"\n'
    assert load_scenario(_scenario(tmp_path, topic)).workload.knobs.crash_interval_s == 0
    scenario = load_scenario(_scenario(tmp_path, topic + 'crash_interval_s = 2.5\n'))
    assert scenario.workload.knobs.crash_interval_s == 2.5


def test_timeline_faults_are_read_in_order(tmp_path: Path) -> None:
    scenario = load_scenario(_scenario(tmp_path, """
[nemesis]
schedule = "timeline"
[[nemesis.timeline]]
at_s = 0
fault = "expire-session"
targets = ["broker-1"]
[[nemesis.timeline]]
at_s = 12.5
fault = "isolate"
duration_s = 5
"""))
    first, second = scenario.nemesis.timeline
    assert (first.fault, first.targets, first.at_s) == ("expire-session", ("broker-1",), 0.0)
    assert (second.fault, second.duration_s) == ("isolate", 5.0)


@pytest.mark.parametrize(("text", "message"), [
    ("[topology]\nbrokers = \"three\"\n", "topology.brokers: expected an integer, got 'three'"),
    ("[topology]\nbrokers = 0\n", "topology.brokers: expected a number of at least 1, got 0"),
    ("[topology]\nbackend = \"k8s\"\n", "topology.backend: expected one of docker, local"),
    ("[topology]\nbrokerz = 3\n", "topology.brokerz: unknown key"),
    ("expected = \"green\"\n", "expected: expected one of valid, invalid, unknown"),
    ("mutants = \"no-fencing\"\n", "mutants: expected a list"),
    ("[nemesis]\nschedule = \"random\"\nfaults = [\"explode\"]\n",
     f"nemesis.faults[0]: expected one of {', '.join(FAULTS)}"),
    ("[nemesis]\nschedule = \"random\"\n", "nemesis.faults: a random schedule needs"),
    ("[nemesis]\nschedule = \"timeline\"\n[[nemesis.timeline]]\nfault = \"kill\"\n",
     "nemesis.timeline[0].at_s: missing"),
    ("[workload]\nkind = \"geo\"\n", "topology.clusters: the geo workload needs at least two"),
    ("duration_s = 0\n", "duration_s: expected a number of at least 1"),
    ("name = [\n", "not valid TOML"),
    ("duration_s = nan\n", "duration_s: expected a finite number, got nan"),
    ("[nemesis]\ninterval_s = inf\n", "nemesis.interval_s: expected a finite number, got inf"),
    ("[nemesis]\naim_clusters = \"all\"\n", "nemesis.aim_clusters: expected one of first, any"),
    ("[nemesis]\nnodes_at_once = 0\n", "nemesis.nodes_at_once: expected a number of at least 1"),
    ("[nemesis]\nlengths_s = [2, \"long\"]\n", "nemesis.lengths_s[1]: expected a number"),
    ("[nemesis]\nbackground = \"meteor\"\n", "nemesis.background: expected one of isolate"),
    ("[nemesis]\nschedule = \"timeline\"\nbackground = \"kill\"\nbackground_s = 9\n"
     "[[nemesis.timeline]]\nat_s = 1\nfault = \"pause\"\n",
     "nemesis.background: only a random schedule takes a background fault"),
    ("[nemesis]\nschedule = \"random\"\nfaults = [\"pause\"]\nbackground = \"kill\"\n",
     "nemesis.background_s: expected the background fault's length, more than 0 seconds"),
    ("[nemesis]\nschedule = \"timeline\"\nquiet_end_s = 9\n"
     "[[nemesis.timeline]]\nat_s = 1\nfault = \"pause\"\n",
     "nemesis.quiet_end_s: only a random schedule takes a quiet end"),
    ("[nemesis]\nschedule = \"random\"\nfaults = [\"pause\"]\nquiet_end_s = -2\n",
     "nemesis.quiet_end_s: expected a number of at least 0, got -2.0"),
    ("duration_s = 30\n[nemesis]\nschedule = \"random\"\nfaults = [\"pause\"]\n"
     "quiet_end_s = 30\n",
     "nemesis.quiet_end_s: expected less than the run's duration_s (30), got 30.0"),
    ("mutants = [\"no-such-bug\"]\n", "mutants[0]: expected one of ack-before-durable, "),
    ("name = \"../elsewhere\"\n", "name: expected letters, digits"),
    ("name = \"/tmp/elsewhere\"\n", "name: expected letters, digits"),
    ("expected = \"invalid\"\nexpected_anomalies = [\"losts\"]\n",
     "expected_anomalies[0]: expected one of lost, unexpected, "),
    ("expected_anomalies = [\"lost\"]\n",
     'expected_anomalies: only for a scenario that expects "invalid"'),
    ("[workload]\nkind = \"contract\"\ngroups = [\"seek\", \"sek\"]\n",
     "workload.groups[1]: expected one of queue-exclusive-single, "),
    ("[workload]\nedge_key_share = 1.5\n",
     "workload.edge_key_share: expected a number from 0 to 1, got 1.5"),
    ("[workload]\nkind = \"topic\"\ngroups = [\"seek\"]\n",
     "workload.groups: only the contract workload takes it, not the topic workload"),
    ("[workload]\nkind = \"topic\"\ncrash_interval_s = -1\n",
     "workload.crash_interval_s: expected a number of at least 0, got -1.0"),
    ("[workload]\nkind = \"geo\"\nprocess_ms = 50\n[topology]\nclusters = [\"a\", \"b\"]\n",
     "workload.process_ms: only the scalable and topic workloads take it, not the geo "
     "workload"),
    ("[workload]\nkind = \"topic\"\nsubscription_mode = \"shared\"\nnack_share = 2\n",
     "workload.nack_share: expected a number from 0 to 1, got 2.0"),
    ("[workload]\nkind = \"topic\"\nnack_share = 0.1\n",
     "workload.nack_share: only with subscription_mode shared or key_shared (in the others "
     "a negative acknowledgement asks for every unacknowledged message again), got failover"),
    ("[workload]\nkind = \"topic\"\nsubscription_mode = \"shared\"\n"
     "cumulative_ack_every = 5\n",
     "workload.cumulative_ack_every: only with subscription_mode exclusive or failover "
     "(Pulsar refuses cumulative acknowledgements on the others), got shared"),
    ("[workload]\nkind = \"geo\"\nsubscription_mode = \"exclusive\"\n",
     "workload.subscription_mode: exclusive attaches one consumer and refuses the others "
     "(ConsumerBusy), and consumers is 2; failover keeps the others as standbys"),
    ("[workload]\nkind = \"topic\"\nreceiver_queue = 0\n",
     "workload.receiver_queue: expected a number of at least 1, got 0"),
    ("[workload]\nkind = \"scalable\"\nreceiver_queue = 10\n",
     "workload.receiver_queue: only the topic workload takes it, not the scalable workload"),
    ("[workload]\nkind = \"scalable\"\nsubscription_mode = \"shared\"\n",
     "workload.subscription_mode: only the topic, geo and migration workloads take it, not "
     "the scalable workload"),
    ("[workload]\nkind = \"scalable\"\ncrash_interval_s = 3\n",
     "workload.crash_interval_s: only the topic workload takes it, not the scalable workload"),
    ("[workload]\nkind = \"scalable\"\nprocesses = 4\n",
     "workload.processes: only the topic, geo and migration workloads take it, not the "
     "scalable workload"),
    ("[workload]\nkind = \"topic\"\nprocesses = 0\n",
     "workload.processes: expected a number of at least 1, got 0"),
    ("[workload]\nkind = \"topic\"\nsend_timeout_s = 0\n",
     "workload.send_timeout_s: expected a number of at least 0.1, got 0"),
    ("[workload]\nkind = \"contract\"\nsend_timeout_s = 2\n",
     "workload.send_timeout_s: only the scalable, topic, geo and migration workloads take it"),
])
def test_mistakes_name_file_key_and_expectation(tmp_path: Path, text: str, message: str) -> None:
    path = _scenario(tmp_path, text)
    with pytest.raises(ScenarioError) as error:
        load_scenario(path)
    assert re.match(rf"{re.escape(str(path))}(:\d+)?: ", str(error.value))
    assert message in str(error.value)


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_bytes(b'name = "\xff"\n')
    with pytest.raises(ScenarioError, match=f"^{path}: not valid TOML: "):
        load_scenario(path)


def test_validate_command_exit_codes(tmp_path: Path) -> None:
    good = REPO / "scenarios" / "smoke" / "scalable-split-partition.toml"
    ok = subprocess.run([sys.executable, "-m", "starquake", "scenario", "validate", str(good)],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "ok (scalable-split-partition, expects valid)" in ok.stdout
    bad = _scenario(tmp_path, "[workload]\nrate = -5\n")
    refused = subprocess.run([sys.executable, "-m", "starquake", "scenario", "validate",
                              str(bad)], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 3
    assert refused.stderr.strip() == (
        f"starquake: {bad}:2: workload.rate: expected a number of at least 1, got -5")
