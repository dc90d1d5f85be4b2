"""The node image: made without any registry, reused while its content is unchanged, and
able to run what the nodes need (java for ZooKeeper, the project's Python, iptables)."""

from __future__ import annotations

import io
import tarfile

import pytest
from docker import DockerClient

from harness import images
from starquake import cluster_cli
from harness.images import NodeImage, build_context_tar, node_image, root_filesystem_tar


def _members(data: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: m for m in tar.getmembers()}


def test_root_filesystem_is_the_same_bytes_every_time() -> None:
    # The image tag is a hash of these bytes: equal content must give an equal tag.
    assert root_filesystem_tar() == root_filesystem_tar()


def test_root_filesystem_links_into_the_mounted_usr() -> None:
    members = _members(root_filesystem_tar())
    assert members["bin"].issym() and members["bin"].linkname == "usr/bin"
    assert members["usr"].isdir() and members["sbin"].isdir()
    assert members["tmp"].mode == 0o1777
    assert "etc/passwd" in members


def test_build_context_holds_the_project_and_no_caches() -> None:
    names = set(_members(build_context_tar()))
    assert {"Dockerfile", "pyproject.toml", "README.md", "harness/images.py",
            "nemesis/partition.py", "starquake/cli.py"} <= names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert not [n for n in names if n.startswith((".venv", "runs/", "tests/"))]
    assert build_context_tar() == build_context_tar()


def test_command_line_offers_every_image_source() -> None:
    assert cluster_cli.IMAGE_SOURCES == images.IMAGE_SOURCES


@pytest.mark.docker
def test_import_builds_once_and_reuses_the_image(docker_client: DockerClient) -> None:
    first = node_image(docker_client, "import")
    again = node_image(docker_client, "auto")
    assert first.source == again.source == "import"
    assert again.tag == first.tag
    assert docker_client.images.get(first.tag).id == docker_client.images.get(again.tag).id


@pytest.mark.docker
def test_imported_image_runs_java_python_and_iptables(docker_client: DockerClient,
                                                       image: NodeImage) -> None:
    script = (f"{image.java} -version && "
              f"{image.python} -c 'import impl.metadata.store, kazoo; print(\"python ok\")' && "
              "iptables -S INPUT")
    output = docker_client.containers.run(
        image.tag, ["sh", "-c", script], remove=True, init=True, cap_add=["NET_ADMIN"],
        network_mode="none", volumes=image.volumes, environment=dict(image.environment),
        stderr=True).decode()
    assert "openjdk" in output.lower()
    assert "python ok" in output
    assert "-P INPUT ACCEPT" in output
