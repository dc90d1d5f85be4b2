"""The Apache Pulsar nodes' configuration, without starting anything: the distribution's
files with our settings applied, the command each node runs and its limits, and what the
backend refuses before a run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest
from docker import DockerClient

from harness.targets.apache_pulsar.config import with_settings
from harness.targets.apache_pulsar.distribution import Distribution
from harness.targets.apache_pulsar.node_specs import PulsarSettings, PulsarSpecs
from harness.targets.apache_pulsar.target import (
    ApachePulsarTarget,
    described_promises,
    pulsar_settings,
)
from harness.targets.docker.containers import ContainerNode
from harness.targets.docker.deployment import ClusterNodes
from harness.targets.docker.described import DescribedPromises
from harness.targets.docker.images import NodeImage
from harness.targets.run_auth import run_auth
from harness.topology import Topology
from history.errors import BadInput, EnvironmentProblem

IMAGE = NodeImage("starquake-node:test", "import", "/venv/bin/python",
                  "/usr/lib/jvm/java-17/bin/java", ("/usr",))


def test_settings_replace_the_files_line_and_add_what_it_lacks() -> None:
    template = "# a comment\n#advertisedAddress=commented\nclusterName=\nport=1\nport=2\n"
    assert with_settings(template, {"clusterName": "a", "port": "6650", "extra": "x"}) == (
        "# a comment\n#advertisedAddress=commented\nclusterName=a\nport=6650\n\n"
        "# Set by starquake (harness/targets/apache_pulsar/node_specs.py).\nextra=x\n")


def _node(name: str, role: str, ip: str) -> ContainerNode:
    node = ContainerNode(cast(DockerClient, None), IMAGE, "run", "a", name, role)
    node.addresses = {"sq-run-a": ip}
    return node


@pytest.fixture
def specs(tmp_path: Path) -> PulsarSpecs:
    home = tmp_path / "apache-pulsar-9.9.9"
    (home / "conf").mkdir(parents=True)
    for name in ("zookeeper.conf", "bookkeeper.conf", "broker.conf"):
        (home / "conf" / name).write_text("clusterName=\nmanagedLedgerDefaultEnsembleSize=3\n")
    return PulsarSpecs(Distribution("9.9.9", tmp_path / "t.tar.gz", home, "0"),
                       PulsarSettings(session_timeout_ms=10000, session_expired_policy="shutdown"))


@pytest.fixture
def cluster(specs: PulsarSpecs) -> ClusterNodes:
    nodes = ClusterNodes("a", [_node("a-zk1", "zookeeper", "10.0.0.2")],
                         [_node("a-bookie1", "bookie", "10.0.0.3")],
                         [_node(f"a-broker{n}", "broker", f"10.0.0.{n + 3}") for n in (1, 2)])
    specs.clusters = {"a": nodes}
    return nodes


def test_clusters_share_the_first_clusters_zookeeper_as_configuration_store(
        specs: PulsarSpecs) -> None:
    def joined(name: str, role: str, ip: str, wan: str) -> ContainerNode:
        node = _node(name, role, ip)
        node.addresses["sq-run-wan"] = wan  # joined last: what it advertises
        return node

    a = ClusterNodes("a", [joined("a-zk1", "zookeeper", "10.0.1.2", "10.9.0.2")], [],
                     [joined("a-broker1", "broker", "10.0.1.3", "10.9.0.3")])
    b = ClusterNodes("b", [joined("b-zk1", "zookeeper", "10.0.2.2", "10.9.0.4")], [],
                     [joined("b-broker1", "broker", "10.0.2.3", "10.9.0.5")])
    specs.clusters = {"a": a, "b": b}
    spec = specs.broker(IMAGE, b, b.brokers[0])
    conf = spec.files[spec.environment["PULSAR_BROKER_CONF"]].splitlines()
    assert "clusterName=b" in conf
    assert "metadataStoreUrl=zk:10.0.2.2:2181" in conf
    assert "configurationMetadataStoreUrl=zk:10.9.0.2:2181" in conf


def test_a_broker_runs_the_distributions_launcher_with_its_settings(
        specs: PulsarSpecs, cluster: ClusterNodes) -> None:
    image = specs.image(IMAGE)
    assert specs.home.as_posix() in image.read_only_mounts
    assert image.environment["JAVA_HOME"] == "/usr/lib/jvm/java-17"
    spec = specs.broker(image, cluster, cluster.brokers[1])
    assert spec.command == (str(specs.home / "bin" / "pulsar"), "broker")
    assert spec.environment["PULSAR_MEM"] == "-Xms256m -Xmx512m -XX:MaxDirectMemorySize=256m"
    conf = spec.files[spec.environment["PULSAR_BROKER_CONF"]]
    for line in ("clusterName=a", "managedLedgerDefaultEnsembleSize=2",
                 "managedLedgerDefaultWriteQuorum=2", "managedLedgerDefaultAckQuorum=2",
                 "advertisedAddress=10.0.0.5", "metadataStoreUrl=zk:10.0.0.2:2181",
                 "metadataStoreSessionTimeoutMillis=10000",
                 "zookeeperSessionExpiredPolicy=shutdown",
                 "managedLedgerDefaultMarkDeleteRateLimit=0.0"):
        assert line in conf.splitlines()
    assert "managedLedgerDefaultEnsembleSize=3" not in conf


@pytest.mark.parametrize(("bookies", "copies"), [(1, 1), (2, 2), (3, 2)])
def test_each_entry_goes_to_two_bookies_or_to_a_lone_one(bookies: int, copies: int) -> None:
    settings = pulsar_settings(Topology(backend="apache-pulsar", bookies=bookies))
    assert (settings.ensemble, settings.write_quorum, settings.ack_quorum) == (copies,) * 3


def test_a_bookie_advertises_its_address_and_keeps_data_in_its_container(
        specs: PulsarSpecs, cluster: ClusterNodes) -> None:
    spec = specs.bookie(IMAGE, cluster, cluster.bookies[0])
    assert spec.environment["BOOKIE_MEM"].startswith("-Xms128m -Xmx256m")
    conf = spec.files[spec.environment["PULSAR_BOOKKEEPER_CONF"]].splitlines()
    assert "advertisedAddress=10.0.0.3" in conf
    assert "metadataServiceUri=metadata-store:zk:10.0.0.2:2181" in conf
    assert "journalDirectory=/data/bookkeeper/journal" in conf
    assert "zkTimeout=10000" in conf  # the brokers' session, not the distribution's 30 s
    assert "autoRecoveryDaemonEnabled=false" in conf


def test_the_backend_needs_the_imported_image(specs: PulsarSpecs) -> None:
    with pytest.raises(EnvironmentProblem, match="imported node image"):
        specs.image(NodeImage("starquake-node:build", "dockerfile", "python", "java"))


@pytest.mark.parametrize(("topology", "mutants", "lookup", "refused"), [
    (Topology(backend="apache-pulsar"), ("no-fencing",), False, "mutants"),
    (Topology(backend="apache-pulsar"), (), True, "lookup service"),
    (Topology(backend="apache-pulsar", auth="token"), (), False, "auth"),
    (Topology(backend="apache-pulsar", snapshot_timeout_s=3), (), False,
     "snapshot_timeout_s is read by our reference brokers only"),
    (Topology(backend="apache-pulsar", replication_keepalive_s=2), (), False,
     "replication_keepalive_s"),
    (Topology(backend="apache-pulsar", controller_step_pause_s=1), (), False,
     "controller_step_pause_s"),
])
def test_what_only_our_implementation_has_is_refused(
        tmp_path: Path, topology: Topology, mutants: tuple[str, ...], lookup: bool,
        refused: str) -> None:
    with pytest.raises(BadInput, match=refused):
        ApachePulsarTarget(topology, mutants, tmp_path, lookup, run_auth(topology))


def test_a_target_file_states_the_brokers_session_and_no_shutdown_bound() -> None:
    promises = described_promises(Topology(backend="apache-pulsar", session_timeout_ms=10000))
    assert promises == DescribedPromises(10.0, 30.0, None)


def test_cluster_up_refuses_what_pulsar_lacks_before_starting_anything(tmp_path: Path) -> None:
    scenario = tmp_path / "pulsar.toml"
    scenario.write_text('[topology]\nbackend = "apache-pulsar"\n')
    result = subprocess.run([sys.executable, "-m", "starquake", "cluster", "up", str(scenario),
                             "--lookup"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 3
    assert "the lookup service is our reference implementation's" in result.stderr
