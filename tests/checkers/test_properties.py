"""Hypothesis: random legal histories check valid; one injected anomaly of a known kind is
reported as exactly that kind and count. Each example checks several histories as runs of
one Spark job, so the property costs a few jobs rather than one per history."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkers.anomaly import CheckSettings
from checkers.check import check_runs
from checkers.load import prepare
from checkers.synthetic import INJECTABLE, SyntheticSpec, write_parquet
from history.checker_registry import CHECKERS

_runs = itertools.count()

history_specs = st.builds(
    SyntheticSpec,
    messages=st.integers(400, 1500),
    seed=st.integers(0, 2**32 - 1),
    keys=st.integers(1, 12),
    producers=st.integers(1, 4),
    inject=st.one_of(st.just({}), st.builds(lambda k, n: {k: n}, st.sampled_from(INJECTABLE),
                                            st.integers(1, 3))),
)


@pytest.mark.spark
@pytest.mark.slow
@settings(max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(specs=st.lists(history_specs, min_size=3, max_size=6))
def test_injected_anomalies_are_reported_exactly(spark, tmp_path_factory, specs) -> None:
    directory = tmp_path_factory.mktemp("property")
    histories = {}
    for spec in specs:
        run = f"run{next(_runs)}"
        write_parquet(spec, directory / f"{run}.parquet")
        histories[run] = (spec, prepare(directory / f"{run}.parquet"))
    results = check_runs(spark, {r: h for r, (_, h) in histories.items()}, CheckSettings())
    for result in results:
        spec = histories[result.run][0]
        counts = {name: c["count"] for name, c in result.results["checkers"].items()}
        # The optional checkers (`unavailable`, `zombie-broker`) judge only runs that set
        # their bounds; none do.
        assert counts == {c.name: spec.inject.get(c.name, 0) for c in CHECKERS
                          if not c.optional}, spec
        assert result.valid is (not spec.inject)
