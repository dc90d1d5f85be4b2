"""Fixtures for the container tests: the engine, the node image, deployments and probes.

Every deployment a test starts is removed after it by its run label, also when the test
fails; the reaper of each deployment covers a test process that is killed outright.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from docker import DockerClient

from harness.targets.docker.containers import ContainerNode
from harness.targets.docker.deployment import DockerDeployment
from harness.targets.docker.engine import connect
from harness.targets.docker.images import NodeImage, node_image
from harness.targets.docker.resources import remove_run
from harness.topology import Topology

# Run in a node's network namespace: which of the given host:port pairs accept a TCP
# connection within a second (all tried at once, so a blocked peer costs one second).
_PROBE = """
import socket, sys
from concurrent.futures import ThreadPoolExecutor
def ok(target):
    host, port = target.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
        return target
    except OSError:
        return None
with ThreadPoolExecutor(len(sys.argv)) as pool:
    print(" ".join(t for t in pool.map(ok, sys.argv[1:]) if t))
"""


@pytest.fixture(scope="session")
def docker_client() -> DockerClient:
    return connect()


@pytest.fixture(scope="session")
def image(docker_client: DockerClient) -> NodeImage:
    return node_image(docker_client, "import")


@pytest.fixture
def deploy(docker_client: DockerClient, tmp_path: Path
           ) -> Iterator[Callable[..., DockerDeployment]]:
    """`deploy(**Topology fields, run_dir=..., settings=...)` -> a started deployment."""
    started: list[DockerDeployment] = []

    def make(run_dir: Path | None = None, **options: Any) -> DockerDeployment:
        settings = {k: options.pop(k) for k in ("settings", "start_timeout") if k in options}
        deployment = DockerDeployment(Topology(**options), client=docker_client,
                                      image_source="import", run_dir=run_dir, **settings)
        started.append(deployment)
        deployment.up()
        return deployment

    yield make
    for deployment in started:
        deployment.down()
        remove_run(docker_client, deployment.run_id)


def reachable(image: NodeImage, source: ContainerNode, targets: dict[str, str]
              ) -> set[str]:
    """The names among `targets` (name -> "ip:port") that `source` can open a TCP
    connection to, tried from its network namespace (which exists even while its process
    is killed or paused)."""
    code, output = source.run_in_netns([image.python, "-c", _PROBE, *targets.values()])
    assert code == 0, f"probe failed in {source.name}: {output}"
    opened = set(output.split())
    return {name for name, address in targets.items() if address in opened}
