"""The `contract` checker on hand-written histories, and the redelivery rules the client
contract workload relies on: a legitimate redelivery (of a message never acknowledged
`ok`) is no anomaly, an acknowledged message delivered again is a `duplicate`. All cases
are checked as the runs of one directory, in one Spark job."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from checkers.anomaly import CheckSettings
from checkers.check import check_runs
from tests.checkers.builder import History, prepared_cases

pytestmark = pytest.mark.spark

Case = Callable[[History], None]
CASES: dict[str, Case] = {}


def case(build: Case) -> Case:
    CASES[build.__name__.strip("_").replace("_", "-")] = build
    return build


def _probe(h: History, name: str, outcome: str, cluster: str = "a", **detail: Any) -> None:
    fields = {"value": name, "topic": "T", "cluster": cluster}
    h.op("p9", "probe", outcome, invoke=fields,
         done={**fields, "detail": detail or None,
               "error": "Timeout" if outcome == "info" else None})


@case
def _passing(h: History) -> None:
    _probe(h, "seek-timestamp", "ok", expected=["m5", "m6"], observed=["m5", "m6"])
    h.drain()


@case
def _failing(h: History) -> None:
    _probe(h, "reader-earliest", "ok", expected=["m1"], observed=["m1"])
    _probe(h, "seek-message-id", "fail", expected=["m4", "m5"], observed={"error": "Timeout"})
    h.drain()


@case
def _could_not_run(h: History) -> None:
    _probe(h, "reader-latest", "ok", expected=["m1"], observed=["m1"])
    _probe(h, "ack-timeout-redelivered", "info", reason="c0 received 1 of 4 messages")
    h.drain()


@case
def _failing_and_could_not_run(h: History) -> None:
    _probe(h, "nack-redelivered", "fail", expected=["m0", "m2"], observed=["m0"])
    _probe(h, "ack-timeout-redelivered", "info")
    h.drain()


@case
def _struck_then_decided(h: History) -> None:
    """A group a fault struck ran again and its probe then observed what it expected."""
    _probe(h, "seek-message-id", "info", reason="a fault struck while the probe's group ran")
    _probe(h, "seek-message-id", "ok", expected=["m4"], observed=["m4"])
    h.drain()


@case
def _struck_then_failing(h: History) -> None:
    _probe(h, "seek-message-id", "info", reason="a fault struck while the probe's group ran")
    _probe(h, "seek-message-id", "fail", expected=["m4"], observed=["m5"])
    h.drain()


@case
def _decided_in_another_cluster(h: History) -> None:
    _probe(h, "seek-message-id", "info", reason="a fault struck while the probe's group ran")
    _probe(h, "seek-message-id", "ok", cluster="b", expected=["m4"], observed=["m4"])
    h.drain()


@case
def _never_completed(h: History) -> None:
    h.writer.record("p9", "invoke", "probe", value="last-message-id", topic="T")
    h.drain()


@case
def _keys_in_any_order(h: History) -> None:
    """Compared as JSON values; the completion's own type is not the verdict."""
    _probe(h, "terminated-refuses-send", "fail", expected={"error": "E", "n": 1},
           observed={"n": 1, "error": "E"})
    h.drain()


TWINS: dict[str, tuple[Any, Any, Any]] = {
    # probe: (expected, what a conforming target shows, what a broken one shows)
    "reader-message-id-inclusive": (["m4", "m5"], ["m4", "m5"], ["m5"]),
    "reader-has-message-available": (
        {"read": ["m0", "m1"], "ended": "unavailable"},
        {"read": ["m0", "m1"], "ended": "unavailable"},
        {"read": ["m0"], "ended": "Timeout"}),
    "reader-leaves-no-subscription": ([], [], ["reader-5f1e"]),
    "seek-shared-starts-over": (["m4", "m5"], ["m4", "m5"], ["m0", "m4", "m5"]),
    "deliver-after": ({"delivered": True, "held": True}, {"delivered": True, "held": True},
                      {"delivered": True, "held": False}),
    "deliver-at": ({"delivered": True, "held": True}, {"delivered": True, "held": True},
                   {"delivered": False, "held": False}),
    "producer-exclusive-refuses-exclusive": ({"refused": True}, {"refused": True},
                                             {"accepted": True}),
    "producer-exclusive-refuses-shared": ({"error": "ProducerBusy"}, {"error": "ProducerBusy"},
                                          {"accepted": True}),
    "producer-name-unique": ({"error": "ProducerBusy"}, {"error": "ProducerBusy"},
                             {"accepted": True}),
    "max-size-message": ({"sent": "Ok", "received": "intact"},
                         {"sent": "Ok", "received": "intact"}, {"sent": "unanswered"}),
    "chunked-message": ({"sent": "Ok", "received": "intact"},
                        {"received": "intact", "sent": "Ok"},
                        {"sent": "Ok", "received": "nothing"}),
    "unsupported-request-prompt": ({"prompt": True}, {"prompt": True}, {"prompt": False}),
}
"""The probes added with readers' and seek's finer points, delayed delivery, producer
access, large messages and refusals: each as a conforming target and a broken one show
it."""


def _twin(name: str, broken: bool) -> Case:
    def build(h: History) -> None:
        expected, conforming, broken_observation = TWINS[name]
        observed = broken_observation if broken else conforming
        _probe(h, name, "fail" if broken else "ok", expected=expected, observed=observed)
        h.drain()
    return build


for _name in TWINS:
    CASES[f"twin-{_name}-pass"] = _twin(_name, broken=False)
    CASES[f"twin-{_name}-fail"] = _twin(_name, broken=True)


@case
def _nack_redelivery(h: History) -> None:
    """Delivered, negatively acknowledged (no `ack`), delivered again, acknowledged."""
    h.subscribe("s", "shared")
    h.send("m1", position="1:0")
    h.recv("m1", position="1:0")
    h.recv("m1", position="1:0")
    h.ack("m1", outcome="info")
    h.drain()


@case
def _redelivery_after_unconfirmed_ack(h: History) -> None:
    """An `info` ack may not have been applied: its message may come again."""
    h.subscribe("s", "shared")
    h.send("m1", position="1:0")
    h.recv("m1", position="1:0")
    h.ack("m1", outcome="info")
    h.recv("m1", position="1:0", process="c1")
    h.drain()


@case
def _closed_consumer_redelivery(h: History) -> None:
    """c0 took m1 and closed without acknowledging; c1 gets it."""
    h.subscribe("s", "shared")
    h.send("m1", position="1:0")
    h.recv("m1", position="1:0", process="c0")
    h.recv("m1", position="1:0", process="c1")
    h.ack("m1", outcome="info", process="c1")
    h.drain()


@case
def _redelivery_after_confirmed_ack(h: History) -> None:
    """The broker counted the ack (`ok`), then a reconnecting consumer got it again."""
    h.subscribe("s", "shared")
    h.send("m1", position="1:0")
    h.send("m2", position="1:1")
    h.recv("m1", position="1:0")
    h.recv("m2", position="1:1")
    h.ack("m1")
    h.recv("m1", position="1:0", process="c1")
    h.recv("m2", position="1:1", process="c1")
    h.drain()


@case
def _resume_after_confirmed_cumulative_ack(h: History) -> None:
    """A cumulative ack of m2 covers m1 and m2: only m1 coming again is a duplicate."""
    h.subscribe("s", "exclusive")
    for n, value in enumerate(["m1", "m2", "m3"]):
        h.send(value, position=f"1:{n}")
    for n, value in enumerate(["m1", "m2", "m3"]):
        h.recv(value, position=f"1:{n}")
    h.ack("m2", cumulative=True)
    h.recv("m1", position="1:0", process="c1")
    h.recv("m3", position="1:2", process="c1")
    h.drain()


@pytest.fixture(scope="module")
def results(spark, tmp_path_factory) -> dict[str, dict]:
    histories = prepared_cases(CASES, tmp_path_factory.mktemp("runs"))
    return {r.run: r.results for r in check_runs(spark, histories, CheckSettings())}


def test_a_probe_that_observed_what_it_expected_passes(results: dict[str, dict]) -> None:
    assert results["passing"]["checkers"]["contract"] == {
        "valid": True, "count": 0, "examples": []}
    assert results["passing"]["valid"] is True


def test_a_probe_that_observed_otherwise_fails_naming_it(results: dict[str, dict]) -> None:
    contract = results["failing"]["checkers"]["contract"]
    assert contract["valid"] is False and contract["count"] == 1
    (example,) = contract["examples"]
    assert example["probe"] == "seek-message-id"
    assert example["expected"] == ["m4", "m5"] and example["observed"] == {"error": "Timeout"}
    assert len(example["events"]) == 2  # the probe's invoke and completion
    assert results["failing"]["valid"] is False


def test_a_probe_that_could_not_run_makes_the_verdict_unknown(
        results: dict[str, dict]) -> None:
    contract = results["could-not-run"]["checkers"]["contract"]
    assert contract["valid"] == "unknown" and contract["count"] == 0
    assert contract["undecided"] == 1
    (example,) = contract["undecided_examples"]
    assert example["probe"] == "ack-timeout-redelivered"
    assert example["error"] == "Timeout" and example["reason"] == "c0 received 1 of 4 messages"
    assert results["could-not-run"]["valid"] == "unknown"


def test_a_failing_probe_beats_one_that_could_not_run(results: dict[str, dict]) -> None:
    contract = results["failing-and-could-not-run"]["checkers"]["contract"]
    assert contract["valid"] is False
    assert contract["count"] == 1 and contract["undecided"] == 1


def test_an_attempt_a_fault_struck_is_decided_by_a_later_one(
        results: dict[str, dict]) -> None:
    assert results["struck-then-decided"]["checkers"]["contract"] == {
        "valid": True, "count": 0, "examples": []}
    failing = results["struck-then-failing"]["checkers"]["contract"]
    assert failing["valid"] is False and failing["count"] == 1
    assert "undecided" not in failing or failing["undecided"] == 0
    elsewhere = results["decided-in-another-cluster"]["checkers"]["contract"]
    assert elsewhere["valid"] == "unknown" and elsewhere["undecided"] == 1


def test_a_probe_that_never_completed_is_undecided(results: dict[str, dict]) -> None:
    contract = results["never-completed"]["checkers"]["contract"]
    assert contract["valid"] == "unknown"
    assert contract["undecided_examples"][0]["reason"] == "the probe never completed"


def test_observations_compare_as_json_values(results: dict[str, dict]) -> None:
    assert results["keys-in-any-order"]["checkers"]["contract"]["valid"] is True


@pytest.mark.parametrize("name", ["nack-redelivery", "redelivery-after-unconfirmed-ack",
                                  "closed-consumer-redelivery"])
def test_legitimate_redeliveries_are_no_anomaly(results: dict[str, dict], name: str) -> None:
    assert results[name]["valid"] is True, results[name]["checkers"]


def test_an_acknowledged_message_delivered_again_is_a_duplicate(
        results: dict[str, dict]) -> None:
    duplicate = results["redelivery-after-confirmed-ack"]["checkers"]["duplicate"]
    assert duplicate["count"] == 1 and duplicate["examples"][0]["value"] == "m1"
    covered = results["resume-after-confirmed-cumulative-ack"]["checkers"]["duplicate"]
    assert covered["count"] == 1 and covered["examples"][0]["value"] == "m1"


@pytest.mark.parametrize("name", sorted(TWINS))
def test_each_new_probe_passes_as_expected_and_fails_otherwise(
        results: dict[str, dict], name: str) -> None:
    assert results[f"twin-{name}-pass"]["checkers"]["contract"]["valid"] is True
    failing = results[f"twin-{name}-fail"]["checkers"]["contract"]
    assert failing["valid"] is False
    (example,) = failing["examples"]
    assert (example["probe"], example["observed"]) == (name, TWINS[name][2])
