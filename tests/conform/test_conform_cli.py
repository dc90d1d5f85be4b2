"""`starquake conform` on bad input: one line naming what and where, the documented code,
before anything runs; and the pieces that need no cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from harness.target import Node, TargetCluster
from harness.targets.external.describe import target_file_text
from harness.targets.external.file import load_target_file
from harness.topology import REFERENCE_RECONNECT_RETRIES, metadata_loss_shutdown_s
from history.errors import EnvironmentProblem
from impl.broker.config import BrokerConfig
from scenarios.format import load_scenario
from starquake.conform.cli import FEATURE_CHOICES
from starquake.conform.features import FEATURE_NAMES, FEATURES, fit, plan_feature
from starquake.conform.pipeline import Row, exit_code
from starquake.run import given_target
from tests.conform.helpers import REPO, conform

NOBODY = "127.0.0.1:9"  # the discard port: nothing listens there


def _file(tmp_path: Path, extra: str = "", service: str = NOBODY) -> Path:
    path = tmp_path / "target.toml"
    path.write_text(f'''
name = "t"
{extra}
[[clusters]]
name = "a"
service_urls = ["pulsar://{service}"]
admin_urls = ["http://{service}"]
''')
    return path


def test_the_command_offers_every_feature() -> None:
    assert FEATURE_CHOICES == FEATURE_NAMES


def test_an_unknown_key_is_exit_3_naming_file_and_key(tmp_path: Path) -> None:
    done, document = conform(_file(tmp_path, "colour = 1"), tmp_path / "runs")
    assert done.returncode == 3
    assert document == {}
    line, = done.stderr.strip().splitlines()
    assert "target.toml" in line and "colour" in line


def test_a_missing_url_is_exit_3(tmp_path: Path) -> None:
    path = tmp_path / "target.toml"
    path.write_text('[[clusters]]\nname = "a"\nadmin_urls = ["http://127.0.0.1:9"]\n')
    done, _ = conform(path, tmp_path / "runs")
    assert done.returncode == 3
    assert "clusters[0].service_urls" in done.stderr


def test_an_unreachable_broker_is_exit_4_naming_the_address(tmp_path: Path) -> None:
    done, _ = conform(_file(tmp_path), tmp_path / "runs", timeout=120)
    assert done.returncode == 4
    line, = done.stderr.strip().splitlines()
    assert NOBODY in line


def test_an_unknown_feature_is_exit_3(tmp_path: Path) -> None:
    done, _ = conform(_file(tmp_path), tmp_path / "runs", "--features", "teleport")
    assert done.returncode == 3 and "teleport" in done.stderr


def test_the_verdict_composes_fail_over_unknown_over_error() -> None:
    def rows(*statuses: str) -> list[Row]:
        return [Row(f"f{n}", "", status) for n, status in enumerate(statuses)]

    assert exit_code(rows("pass", "skipped", "unsupported")) == 0
    assert exit_code(rows("pass", "error", "unknown", "fail")) == 1
    assert exit_code(rows("pass", "error", "unknown")) == 2
    assert exit_code(rows("pass", "error")) == 4


class _Target:
    """Just what `fit` reads of a Target."""

    def __init__(self, session_timeout_s: float, clusters: tuple[str, ...],
                 metadata_loss_shutdown_s: float | None = None) -> None:
        self.session_timeout_s = session_timeout_s
        self.clusters = tuple(TargetCluster(name, (), (), None) for name in clusters)
        self.metadata_loss_shutdown_s = metadata_loss_shutdown_s


def test_faults_that_must_outlast_the_session_are_stretched_to_the_target() -> None:
    feature = next(f for f in FEATURES if f.name == "durability-pause")
    scenario = load_scenario(feature.scenario_path())
    fitted = fit(scenario, feature, _Target(30.0, ("east",)))  # type: ignore[arg-type]
    (pause,) = fitted.nemesis.timeline
    assert pause.duration_s == 45.0
    assert fitted.duration_s >= pause.at_s + pause.duration_s + 8
    assert fitted.topology.clusters == ("east",)
    short = fit(scenario, feature, _Target(2.0, ("a",)))  # type: ignore[arg-type]
    assert short.nemesis.timeline == scenario.nemesis.timeline  # already long enough


def test_the_shutdown_feature_holds_a_target_to_the_bound_it_declares() -> None:
    feature = next(f for f in FEATURES if f.name == "metadata-loss-shutdown")
    persistent = {"persistent": (True, "claimed")}
    silent = plan_feature(feature, _Target(4.0, ("a",)),  # type: ignore[arg-type]
                          persistent, seed=1)  # type: ignore[arg-type]
    assert (silent.status, silent.reason) == (
        "unsupported", "the target declares no metadata_loss_shutdown_s")
    scenario = load_scenario(feature.scenario_path())
    fitted = fit(scenario, feature, _Target(30.0, ("a",), 120.0))  # type: ignore[arg-type]
    assert fitted.checkers.zombie_broker_bound_ms == 125_000  # the bound and the readings' slack
    (cut,) = fitted.nemesis.timeline
    assert cut.fault == "broker-from-zookeeper"
    assert cut.duration_s == 165.0  # past the bound by a session timeout and 10 s
    assert fitted.duration_s >= cut.at_s + cut.duration_s + 8
    # The packaged file is already fitted to our brokers in containers: 4 s sessions,
    # three retries.
    ours = fit(scenario, feature,
               _Target(4.0, ("a",), metadata_loss_shutdown_s("reconnect", 4.0)))  # type: ignore[arg-type]
    assert ours == scenario


def test_the_reference_brokers_retries_are_the_ones_the_bound_counts() -> None:
    assert BrokerConfig.session_reconnect_retries == REFERENCE_RECONNECT_RETRIES
    assert metadata_loss_shutdown_s("reconnect", 4.0) == 16.0
    assert metadata_loss_shutdown_s("shutdown", 4.0) == 4.0


def test_a_written_target_file_loads(tmp_path: Path) -> None:
    cluster = TargetCluster("a", ("pulsar://127.0.0.1:6650",), ("http://127.0.0.1:8080",),
                            "127.0.0.1:2181", (Node("a-broker1", "broker", "a", "127.0.0.1"),))
    path = tmp_path / "written.toml"
    path.write_text(target_file_text("w", [cluster], 4.0, {"a-broker1": {"control": "hooks"}},
                                     header="a header\nof two lines",
                                     hooks={"kill": "kill -9 {node}", "start": "true {node}"},
                                     snapshot_timeout_s=2.5, metadata_loss_shutdown_s=16))
    loaded = load_target_file(path)
    assert loaded.name == "w" and loaded.session_timeout_s == 4.0
    assert loaded.snapshot_timeout_s == 2.5 and loaded.metadata_loss_shutdown_s == 16.0
    assert [node.name for node in loaded.nodes] == ["a-broker1"]


def test_every_example_target_file_loads() -> None:
    examples = sorted((REPO / "examples" / "targets").rglob("*.toml"))
    assert len(examples) >= 4
    for path in examples:
        assert load_target_file(path).clusters, path


def test_after_the_shutdown_feature_every_controlled_broker_is_started_and_awaited(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker that shut down as PIP-57 asks is started again, as a supervisor would, and
    the next feature waits while it is down or unhealthy; a broker without process
    control is left to the target's own supervisor, and one whose start fails is named
    and not waited for."""
    started: list[str] = []
    answers = {"http://b1": ["down", "unhealthy", "healthy"], "http://b2": ["healthy"]}

    class _Control:
        def __init__(self, name: str) -> None:
            self.name = name

        def start(self) -> None:
            if self.name == "a-broker4":
                raise EnvironmentProblem("a-broker4: start failed: no such container")
            started.append(self.name)

    class _Brokers:
        clusters = (TargetCluster(
            "a", ("pulsar://b1", "pulsar://b2", "pulsar://b3", "pulsar://b4"),
            ("http://b1", "http://b2", "http://b3", "http://b4"), None, (
                Node("a-broker1", "broker", "a", "b1", frozenset({"kill"})),
                Node("a-broker2", "broker", "a", "b2", frozenset({"kill", "pause"})),
                Node("a-broker3", "broker", "a", "b3"),
                Node("a-broker4", "broker", "a", "b4", frozenset({"kill"})))),)

        def control(self, name: str) -> _Control:
            return _Control(name)

    monkeypatch.setattr(given_target, "read_health",
                        lambda url: {"answer": answers[url].pop(0)})
    monkeypatch.setattr("starquake.run.given_target.time.sleep", lambda _s: None)
    console = Console(record=True, width=200)
    given_target.start_brokers_again(_Brokers(), console)  # type: ignore[arg-type]
    assert started == ["a-broker1", "a-broker2"]
    assert "could not start a-broker4 again: a-broker4: start failed" in console.export_text()
    assert answers == {"http://b1": [], "http://b2": []}  # read until healthy, no longer
