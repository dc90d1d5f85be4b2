"""The neighbours `starquake shrink` tries (scenarios/shrink.py): each removes or reduces
one thing and is smaller by `size`, the boldest (a fault) first; a scenario with nothing
left to take has no smaller neighbour."""

from __future__ import annotations

import dataclasses

from harness.topology import Topology
from harness.workloads.settings import WorkloadSettings
from nemesis.schedule import NemesisSettings
from scenarios.draw import draw_scenario
from scenarios.format import Scenario
from scenarios.shrink import candidates, size


def test_every_neighbour_of_a_drawn_scenario_is_smaller_and_says_what_it_took() -> None:
    for seed in range(40):
        scenario = draw_scenario(seed, "docker")
        neighbours = list(candidates(scenario))
        assert neighbours, seed
        for what, smaller in neighbours:
            assert what and size(smaller) < size(scenario), (seed, what)


def test_faults_go_first_one_at_a_time() -> None:
    scenario = dataclasses.replace(
        draw_scenario(1, "docker"),
        nemesis=NemesisSettings(schedule="random", faults=("kill", "pause"), duration_s=4))
    (first, second, *_rest) = candidates(scenario)
    assert first[0] == "fault kill removed" and first[1].nemesis.faults == ("pause",)
    assert second[0] == "fault pause removed" and second[1].nemesis.faults == ("kill",)


def test_every_fault_at_once_is_the_last_neighbour() -> None:
    scenario = dataclasses.replace(
        draw_scenario(1, "docker"),
        nemesis=NemesisSettings(schedule="random", faults=("kill",), duration_s=4))
    what, quiet = list(candidates(scenario))[-1]
    nemesis = quiet.nemesis
    assert what == "every fault removed"
    assert (nemesis.schedule, nemesis.faults, nemesis.timeline) == ("none", (), ())
    assert size(quiet) < size(scenario)


def test_a_bare_scenario_has_no_smaller_neighbour() -> None:
    bare = Scenario(name="bare", path=draw_scenario(1, "docker").path, duration_s=10,
                    topology=Topology(brokers=1), workload=WorkloadSettings(
                        kind="topic", rate=1, keys=1, producers=1, consumers=1))
    bare = dataclasses.replace(bare, workload=dataclasses.replace(
        bare.workload, knobs=draw_scenario(1, "docker").workload.knobs.__class__()))
    assert [what for what, smaller in candidates(bare) if size(smaller) < size(bare)] == []


def test_a_random_schedule_s_shapes_go_back_to_their_defaults_one_at_a_time() -> None:
    shaped = NemesisSettings(schedule="random", faults=("kill",), duration_s=4, overlap=0.5,
                             roles=("bookie",), aim_clusters="any", nodes_at_once=2,
                             lengths_s=(2.0, 8.0, 30.0), background="kill",
                             background_at_s=3.0, background_s=20.0, quiet_end_s=12.0)
    scenario = dataclasses.replace(draw_scenario(1, "docker"), nemesis=shaped)
    took = {what: smaller.nemesis for what, smaller in candidates(scenario)}
    assert took["faults strike one node at a time"] == dataclasses.replace(shaped,
                                                                         nodes_at_once=1)
    assert took["faults one after another"].overlap == 0
    assert took["faults at their own aims only"].roles == ()
    assert took["faults in the first cluster only"].aim_clusters == "first"
    assert took["every fault about the same length"].lengths_s == ()
    assert took["faults halved to about 15 s"].lengths_s == (1.0, 4.0, 15.0)
    assert took["faults halved to about 15 s"].background_s == 10.0
    assert took["no fault beneath the others"] == dataclasses.replace(
        shaped, background=None, background_at_s=0.0, background_s=0.0)
    halved = f"run halved to {scenario.duration_s / 2:g} s"
    assert took[halved].quiet_end_s == 6.0  # the quiet end keeps its share of the run
    assert took["every fault removed"].background is None
    assert took["every fault removed"].quiet_end_s == 0.0


def test_a_quiet_end_is_cut_off_before_the_run_is_halved() -> None:
    """The run's faults stay where they were, the load ending at the final heal."""
    drawn = draw_scenario(1, "docker")
    quiet = dataclasses.replace(drawn, duration_s=70.0, nemesis=NemesisSettings(
        schedule="random", faults=("kill",), quiet_end_s=30.0))
    shorter = [(what, smaller) for what, smaller in candidates(quiet)
               if smaller.duration_s < quiet.duration_s]
    what, cut = shorter[0]
    assert what == "quiet end cut off (run 40 s)"
    assert (cut.duration_s, cut.faults_s, cut.nemesis.quiet_end_s) == (40.0, 40.0, 0.0)
    assert size(cut) < size(quiet)
    assert shorter[1][0] == "run halved to 35 s"
