"""The client-contract probes each broker mutant breaks, run through the workload against
the in-process broker and judged by the checkers: with the mutant on, the `contract`
checker names exactly those probes; with none on, every probe of these groups passes.
The refusal probe, which no mutant breaks, is shown to catch a request left unanswered,
played by the client."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pulsar
import pytest
from pyspark.sql import SparkSession

from harness.workloads.contract import delayed, large, producers, refusal
from harness.workloads.contract.clients import GroupSpec
from harness.workloads.contract.limits import OPERATION_TIMEOUT_S
from impl.mutants import Mutants
from tests.broker.conftest import serving
from tests.run.contract_run import judged, probe_outcomes, run_contract

pytestmark = [pytest.mark.spark, pytest.mark.slow]

GROUPS: tuple[GroupSpec, ...] = (*producers.GROUPS, *delayed.GROUPS, *large.GROUPS,
                                 *refusal.GROUPS)
BROKEN = {
    "exclusive-producer-not-enforced": {"producer-exclusive-refuses-exclusive",
                                        "producer-exclusive-refuses-shared"},
    "producer-name-not-exclusive": {"producer-name-unique"},
    "deliver-at-ignored": {"deliver-after", "deliver-at"},
    "frame-limit-without-padding": {"max-size-message", "chunked-message"},
}
"""Each mutant and the probes it must fail."""
UNANSWERED = "unanswered-request"


def _groups_of(probes: set[str]) -> tuple[GroupSpec, ...]:
    return tuple(spec for spec in GROUPS if probes & set(spec.probes))


def _run_on_broker(directory: Path, mutants: list[str],
                   groups: tuple[GroupSpec, ...]) -> Path:
    with serving(mutants=Mutants.of(mutants)) as broker:
        path, _ = run_contract(directory, [broker.url], [], groups, ())
    return path


def _unanswered_pattern_subscribe(directory: Path) -> Path:
    """A target that never answers a pattern subscription: the client waits out its
    operation timeout."""
    subscribe = pulsar.Client.subscribe

    def hanging(self: pulsar.Client, topic: Any, *args: Any, **options: Any) -> Any:
        if isinstance(topic, re.Pattern):
            time.sleep(OPERATION_TIMEOUT_S)
            raise pulsar.Timeout("no answer")
        return subscribe(self, topic, *args, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pulsar.Client, "subscribe", hanging)
        return _run_on_broker(directory, [], refusal.GROUPS)


@pytest.fixture(scope="module")
def results(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, dict[str, Any]]:
    runs = tmp_path_factory.mktemp("runs")
    paths = {"none": _run_on_broker(runs / "none", [], GROUPS)}
    for mutant, probes in BROKEN.items():
        paths[mutant] = _run_on_broker(runs / mutant, [mutant], _groups_of(probes))
    paths[UNANSWERED] = _unanswered_pattern_subscribe(runs / UNANSWERED)
    assert set(probe_outcomes(paths["none"]).values()) == {"ok"}, probe_outcomes(paths["none"])
    return judged(spark, paths)


def _failed_probes(results: dict[str, Any]) -> set[str]:
    contract = results["checkers"]["contract"]
    assert contract["count"] == len(contract["examples"])
    return {example["probe"] for example in contract["examples"]}


def test_with_no_mutant_every_probe_passes(results: dict[str, dict[str, Any]]) -> None:
    assert results["none"]["valid"] is True, results["none"]["checkers"]


@pytest.mark.parametrize("mutant", sorted(BROKEN))
def test_a_mutant_fails_the_probes_of_what_it_breaks(
        results: dict[str, dict[str, Any]], mutant: str) -> None:
    assert results[mutant]["checkers"]["contract"]["valid"] is False
    assert _failed_probes(results[mutant]) == BROKEN[mutant]


def test_a_request_left_unanswered_fails_the_refusal_probe(
        results: dict[str, dict[str, Any]]) -> None:
    assert _failed_probes(results[UNANSWERED]) == {"unsupported-request-prompt"}
