"""A Spark standalone cluster in containers: one master and N workers, each a node of its
own (own address, own processes) on a network of its own, for checking histories on a real
multi-node cluster (docs/spark-cluster.md) in tests and benches.

The nodes run the node image, so they have the project's Python (pip's pyspark, with its
`bin/spark-class` and jars) and Java at this machine's paths. The driver stays on this
machine: it is reached at the host's address on the network's bridge (its gateway). The
shared directory is mounted at the same path in every worker, read-only: the executors only
read the prepared files the driver stages there.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from docker import DockerClient

from harness.targets.docker.containers import ContainerNode, NodeSpec
from harness.targets.docker.engine import new_run_id
from harness.targets.docker.images import NodeImage
from harness.targets.docker.networks import create_networks
from harness.targets.docker.reaper import Reaper
from harness.targets.docker.resources import remove_run
from harness.waits import LogLine

MASTER_PORT = 7077
NETWORK = "spark"
START_TIMEOUT_S = 90.0


@dataclass(frozen=True)
class SparkCluster:
    master_url: str
    driver_host: str
    """The host's address on the cluster's network, where executors reach the driver."""
    python: str
    """The interpreter the workers have (the node image's)."""
    workers: tuple[ContainerNode, ...]


def spark_home() -> Path:
    """pip's pyspark is a whole Spark distribution: jars, `bin/spark-class`."""
    spec = importlib.util.find_spec("pyspark")
    assert spec is not None and spec.origin is not None, "pyspark is a dependency"
    return Path(spec.origin).parent


def _spark_spec(image: NodeImage, ip: str, main_class: str, *args: str,
                ready: str) -> NodeSpec:
    home = spark_home()
    return NodeSpec(
        command=(str(home / "bin" / "spark-class"), main_class, *args),
        wait=LogLine(ready),
        environment={"SPARK_HOME": str(home), "SPARK_LOCAL_IP": ip,
                     "JAVA_HOME": str(Path(image.java).parent.parent),
                     "SPARK_NO_DAEMONIZE": "1"})


@contextmanager
def spark_cluster(client: DockerClient, image: NodeImage, workers: int, shared_dir: Path,
                  cores_per_worker: int = 1, memory_per_worker: str = "3g"
                  ) -> Iterator[SparkCluster]:
    """A master and `workers` workers, serving; every container and the network removed
    on the way out, whatever the way (a watchdog does it if this process dies)."""
    run_id = f"spark-{new_run_id()}"
    reaper = Reaper(run_id)
    shared = str(shared_dir.resolve())
    node_image = dataclasses.replace(image,
                                     read_only_mounts=(*image.read_only_mounts, shared))
    try:
        network = create_networks(client, run_id, [NETWORK]).clusters[NETWORK]
        network.reload()
        gateway = network.attrs["IPAM"]["Config"][0]["Gateway"]
        master = ContainerNode(client, node_image, run_id, NETWORK, "spark-master", "master")
        master.attach([network])
        master.launch(_spark_spec(
            node_image, master.ip, "org.apache.spark.deploy.master.Master",
            "--host", master.ip, "--port", str(MASTER_PORT), "--webui-port", "8080",
            ready=r"I have been elected leader"))
        master.wait_ready(START_TIMEOUT_S)
        master_url = f"spark://{master.ip}:{MASTER_PORT}"
        nodes = [ContainerNode(client, node_image, run_id, NETWORK, f"spark-worker{n}",
                               "worker") for n in range(1, workers + 1)]
        for node in nodes:
            node.attach([network])
            node.launch(_spark_spec(
                node_image, node.ip, "org.apache.spark.deploy.worker.Worker", master_url,
                "--host", node.ip, "--cores", str(cores_per_worker),
                "--memory", memory_per_worker, "--work-dir", "/tmp/spark-work",
                ready=r"Successfully registered with master"))
        for node in nodes:
            node.wait_ready(START_TIMEOUT_S)
        yield SparkCluster(master_url, gateway, node_image.python, tuple(nodes))
    finally:
        try:
            remove_run(client, run_id)
        finally:
            reaper.release()
