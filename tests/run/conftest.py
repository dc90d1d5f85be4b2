"""Scenario files written into a test's temporary directory, and the short mutants suite
that the run tests of several modules read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from scenarios.format import Scenario, load_scenario
from tests.run.suite_runs import REPO, SuiteRuns

MUTANTS_SUITE = (
    *(f"scenarios/mutants/{name}.toml" for name in (
        "topic-ack-before-durable", "contract-deliver-at-ignored", "geo-markers-dispatched",
        "scalable-skip-terminate", "scalable-child-cursor-at-latest",
        "scalable-children-before-parent-drained", "scalable-admin-range-start-exclusive",
        "scalable-no-roll-forward", "scalable-layout-without-cas",
        "scalable-no-grace-period", "migration-out-of-order",
        "topic-cumulative-ack-through-dispatched", "topic-dedup-state-lost-on-owner-change")),
    "tests/run/scenarios/topic-consumers-mutants.toml",
)
"""CI's short mutants suite, on local processes: mutants of storage, the client contract,
replication, the scalable controller (one caught only as unavailability, one only by a
reader that starts after the load) and coordinator (one caught only as segments moved
between consumers), the admin API, the subscription (its cumulative acknowledgements
among them), the broker's deduplication and the lookup service's tenant migration, each
caught by its named anomaly.
(Their clean twins are the detection table's, docs/detection.md; `update-past-mark-delete`
is caught in tests/geo/test_failover.py.)"""

WriteScenario = Callable[[str], Scenario]

SUITE_FIXTURES = ("mutants_suite", "smoke", "unanswered_snapshot")
"""Fixtures that run a whole `starquake suite` (each bounds it itself, at most 1500 s)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The first test to ask for a suite fixture waits while the suite runs: it gets the
    suite's own bound, not pytest-timeout's 600 s for one test, which a slow machine
    passes with a dozen scenarios."""
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in SUITE_FIXTURES):
            item.add_marker(pytest.mark.timeout(1800))


@pytest.fixture
def write_scenario(tmp_path: Path) -> WriteScenario:
    """Load TOML text as the scenario file `s.toml`."""

    def write(text: str) -> Scenario:
        path = tmp_path / "s.toml"
        path.write_text(text)
        return load_scenario(path)

    return write


@pytest.fixture(scope="session")
def mutants_suite(tmp_path_factory: pytest.TempPathFactory) -> SuiteRuns:
    """The short mutants suite, run once for every test that reads one of its runs."""
    return SuiteRuns(tmp_path_factory.mktemp("mutants") / "runs",
                     *(str(REPO / path) for path in MUTANTS_SUITE), timeout_s=1500)
