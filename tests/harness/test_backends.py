"""A backend is one entry of harness/backends.py: a throwaway one registered here, in the
test only, is taken by scenario validation, planned over with its capabilities and
deployed; and a deployment used as a context manager is torn down however its block ends."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from harness.backends import BACKENDS, Backend, UnknownBackend
from harness.target import CAPABILITIES, Capability, NetworkControl, NodeControl, TargetCluster
from harness.targets import deploy
from harness.targets.external.file import HOOK_PAIRS
from harness.targets.lookup import DeployedLookup
from harness.targets.run_auth import RunAuth
from harness.targets.topology_deployment import TopologyDeployment
from harness.topology import Topology, planned_nodes
from scenarios.format import ScenarioError, load_scenario
from scenarios.plan import schedule_for


class Throwaway(TopologyDeployment):
    """A deployment that starts nothing and records what it was asked."""

    def __init__(self, topology: Topology, mutants: tuple[str, ...], run_dir: Path,
                 lookup_service: bool, auth: RunAuth | None) -> None:
        super().__init__(topology, DeployedLookup(lookup_service, run_dir, auth, mutants))
        self.where = f"nowhere, for {run_dir}"
        self.calls: list[str] = []
        self.fail_start: BaseException | None = None

    def start(self) -> None:
        self.calls.append("start")
        if self.fail_start is not None:
            raise self.fail_start

    def stop(self) -> None:
        self.calls.append("stop")

    @property
    def clusters(self) -> tuple[TargetCluster, ...]:
        return ()

    def control(self, node: str) -> NodeControl:
        raise KeyError(node)

    @property
    def network(self) -> NetworkControl | None:
        return None


THROWAWAY = Backend("throwaway", "nothing at all", frozenset({"kill"}),
                    f"{__name__}:Throwaway", on_loopback=True)


@pytest.fixture
def throwaway(monkeypatch: pytest.MonkeyPatch) -> Backend:
    monkeypatch.setitem(BACKENDS, THROWAWAY.name, THROWAWAY)
    return THROWAWAY


def _scenario(tmp_path: Path, nemesis: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(f'[topology]\nbackend = "throwaway"\nbrokers = 2\n{nemesis}')
    return path


def test_a_registered_backend_is_taken_by_scenarios_plans_and_deploy(
        throwaway: Backend, tmp_path: Path) -> None:
    kill = '[nemesis]\nschedule = "timeline"\n[[nemesis.timeline]]\nat_s = 1\nfault = "kill"\n'
    scenario = load_scenario(_scenario(tmp_path, kill))
    assert scenario.topology.backend == "throwaway"
    assert {node.capabilities for node in planned_nodes(scenario.topology)} == {
        frozenset({"kill"})}
    assert {node.address for node in planned_nodes(scenario.topology)} == {"127.0.0.1"}
    assert [step.fault for step in schedule_for(scenario, 1).steps] == ["kill"]
    deployment = deploy(scenario.topology, (), tmp_path)
    assert isinstance(deployment, Throwaway) and deployment.where == f"nowhere, for {tmp_path}"


def test_a_fault_the_backend_cannot_take_is_refused_before_the_run(
        throwaway: Backend, tmp_path: Path) -> None:
    pause = '[nemesis]\nschedule = "timeline"\n[[nemesis.timeline]]\nat_s = 1\nfault = "pause"\n'
    scenario = load_scenario(_scenario(tmp_path, pause))
    with pytest.raises(ScenarioError, match=r"nemesis.timeline.0..fault: .*needs pause"):
        schedule_for(scenario, 1)


def test_an_unregistered_backend_is_refused(tmp_path: Path) -> None:
    known = ", ".join(BACKENDS)
    with pytest.raises(ScenarioError, match=rf"s.toml:2: topology.backend: expected one of "
                                            rf"{known}, got 'throwaway'"):
        load_scenario(_scenario(tmp_path, ""))
    with pytest.raises(UnknownBackend, match="no backend is called 'throwaway'"):
        deploy(Topology(backend="throwaway"), (), tmp_path)


def _deployed(tmp_path: Path) -> Throwaway:
    deployment = deploy(Topology(backend="throwaway"), (), tmp_path)
    assert isinstance(deployment, Throwaway)
    return deployment


def test_a_deployment_as_context_manager_starts_and_stops(
        throwaway: Backend, tmp_path: Path) -> None:
    deployment = _deployed(tmp_path)
    with deployment as target:
        assert target is deployment and deployment.calls == ["start"]
    assert deployment.calls == ["start", "stop"]


@pytest.mark.parametrize("ending", [RuntimeError("the block failed"), KeyboardInterrupt()])
def test_a_block_that_fails_still_stops_the_deployment(
        throwaway: Backend, tmp_path: Path, ending: BaseException) -> None:
    deployment = _deployed(tmp_path)
    with pytest.raises(type(ending)), deployment:
        raise ending
    assert deployment.calls == ["start", "stop"]


@pytest.mark.parametrize("failure", [RuntimeError("a node would not start"), KeyboardInterrupt()])
def test_a_start_that_fails_stops_what_it_began(
        throwaway: Backend, tmp_path: Path, failure: BaseException) -> None:
    deployment = _deployed(tmp_path)
    deployment.fail_start = failure
    with pytest.raises(type(failure)), deployment:
        pytest.fail("the block runs only after a start")
    assert deployment.calls == ["start", "stop"]


def test_every_backend_resolves_to_its_deployment_and_offers_declared_capabilities() -> None:
    for backend in BACKENDS.values():
        assert callable(backend.deployment_class()), backend.name
        assert backend.capabilities <= set(CAPABILITIES), backend.name


def test_capabilities_are_declared_once() -> None:
    """The `Capability` names and the table are the same list, and the target file's hooks
    come from the table."""
    assert set(get_args(Capability)) == set(CAPABILITIES)
    assert all(name == spec.name for name, spec in CAPABILITIES.items())
    assert HOOK_PAIRS == {"kill": ("kill", "start"), "pause": ("pause", "resume"),
                          "partition": ("partition", "heal")}
