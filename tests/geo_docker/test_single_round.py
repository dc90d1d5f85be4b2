"""Why three clusters need PIP-33's second round, on clusters in containers.

Two replication links are stalled in turn so that an answer overtakes a message: a's
requests stall on their way to b while c answers them at once; then c's link to a stalls
and c keeps publishing, so its newer messages reach b but not a; then a's requests are let
through, and b answers with a position that covers those messages. A first round is now
complete although a lacks messages that b's answer counts. A correct snapshot asks again
(the second round) and waits for c's answer, which can only arrive behind the missing
messages; the `single-round` mutant writes the snapshot at once, a's consumer passes it,
and the update moves b's subscription past c's messages that a never delivered: the
failover a -> b loses them."""

from __future__ import annotations

import time
from collections.abc import Callable

import pulsar
import pytest

from harness.targets.docker.iptables import IptablesNetwork
from harness.targets.docker.node_specs import BROKER_PORT
from nemesis.partition import Partitioner
from tests.geo.failover import Outcome, Scene, play, report
from tests.geo.geo_clusters import wait_until
from tests.geo_docker.conftest import GeoDeployment, completed_snapshots, holds_subscription

pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.slow]

ANSWERED_S = 2.5
"""How long c answers a's requests alone (at least two snapshot ticks)."""
OVERTAKEN_S = 2.0
"""How long c's messages reach b but not a before b hears a's requests."""
IN_FLIGHT = 1
"""Snapshots a correct broker may complete after the release (see the first test)."""


class AnswerOvertakesMessages:
    """The stalls of the module docstring. Each stall is its own Partitioner, because one
    is lifted while the other stays: a's requests to b on b's side, c's link to a on a's."""

    def __init__(self, geo: GeoDeployment, topic: str) -> None:
        self._requests = Partitioner(IptablesNetwork(geo.deployment.nodes))
        self._from_c = Partitioner(IptablesNetwork(geo.deployment.nodes))
        self._a, self._b, _ = geo.clusters
        self._topic = topic
        self.when_released = self.at_end = -1

    def inject(self) -> None:
        wait_until("b holds the subscription", lambda: holds_subscription(self._b, self._topic))
        self._requests.stall_port("a-broker1", "b-broker1", BROKER_PORT)
        time.sleep(ANSWERED_S)
        self._from_c.stall_port("c-broker1", "a-broker1", BROKER_PORT)
        time.sleep(OVERTAKEN_S)
        self.when_released = completed_snapshots(self._a, self._topic)
        self._requests.heal()

    def heal(self) -> None:
        """The scene's end: the count the test judges, then every link works again."""
        self.at_end = completed_snapshots(self._a, self._topic)
        self.lift()

    def lift(self) -> None:
        self._requests.heal()
        self._from_c.heal()


def _failover_after_an_overtaking_answer(geo_deployment: Callable[..., GeoDeployment],
                                         pulsar_client: Callable[..., pulsar.Client],
                                         mutants: tuple[str, ...]) -> tuple[Outcome, int, int]:
    geo = geo_deployment(["a", "b", "c"], mutants=mutants)
    a, b, c = geo.clusters
    # 20 s of traffic from a and c. The consumer in a keeps up with what arrives and stops
    # after as many messages as a alone publishes: about 15 s in, long after b's answers
    # came through (about 7 s in), so it passes any snapshot they completed.
    scene = Scene(source=a, target=b, producers=[a, c], messages_per_producer=400, rate=20,
                  acknowledge=400)
    fault = AnswerOvertakesMessages(geo, scene.topic)
    scene.fault = fault
    outcome = play(scene, pulsar_client, [a, b, c])
    label = ", ".join(mutants) or "two rounds"
    report(f"{label}: an answer from b overtook c's messages, failover a -> b", outcome)
    print(f"{label}: a had completed {fault.when_released} snapshots when b heard the "
          f"requests, {fault.at_end} when the traffic ended")
    return outcome, fault.when_released, fault.at_end


def test_a_second_round_waits_for_c_and_the_failover_loses_nothing(
        geo_deployment: Callable[..., GeoDeployment],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    outcome, released, at_end = _failover_after_an_overtaking_answer(
        geo_deployment, pulsar_client, ())
    # c's second answers wait behind the stall. One snapshot may still complete after the
    # release: one whose second request reached c before c's link stalled, but was caught
    # on its way to b; c answered it while its messages still reached a, so it is sound.
    assert at_end - released <= IN_FLIGHT
    assert outcome.lost == set()


def test_mutant_single_round_loses_c_messages_after_failover(
        geo_deployment: Callable[..., GeoDeployment],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    outcome, released, at_end = _failover_after_an_overtaking_answer(
        geo_deployment, pulsar_client, ("single-round",))
    assert at_end > released
    assert outcome.lost
    assert all(message.startswith("c-") for message in outcome.lost)
