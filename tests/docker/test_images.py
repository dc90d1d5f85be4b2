"""The node image: made without any registry, reused while its content is unchanged, and
able to run what the nodes need (java for ZooKeeper, the project's Python, iptables); the
Dockerfile's build context is the installed packages plus generated install metadata."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import io
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from docker import DockerClient

import harness
from harness.targets.docker import images
from harness.targets.docker.images import (
    NodeImage,
    build_context_tar,
    node_image,
    root_filesystem_tar,
)
from starquake import cluster_cli


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


def _context_file(data: bytes, name: str) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = tar.extractfile(name)
        assert member is not None
        return member.read()


def test_build_context_holds_the_packages_and_no_caches() -> None:
    names = set(_members(build_context_tar()))
    assert {"Dockerfile", "pyproject.toml", "harness/targets/docker/images.py",
            "harness/targets/docker/Dockerfile",
            "nemesis/partition.py", "starquake/cli.py", "scenarios/smoke/topic-faults.toml",
            "history/examples/split-topic/history.jsonl"} <= names
    assert {n.split("/")[0] for n in names} == {"Dockerfile", "pyproject.toml",
                                                *images.BUILD_CONTEXT_PACKAGES}
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert build_context_tar() == build_context_tar()


def test_build_context_pins_the_installed_distributions_dependencies() -> None:
    """The context's pyproject.toml is generated from the installed metadata (an installed
    package has no pyproject.toml of its own): the same pins, no extras, the same script."""
    project = tomllib.loads(_context_file(build_context_tar(), "pyproject.toml").decode())
    assert project["project"]["name"] == "starquake"
    assert project["project"]["version"] == importlib.metadata.version("starquake")
    installed = importlib.metadata.requires("starquake") or []
    assert project["project"]["dependencies"] == [r for r in installed if "extra" not in r]
    assert "pyspark==4.3.0" in project["project"]["dependencies"]
    assert project["project"]["scripts"] == {"starquake": "starquake.cli:main"}


def test_build_context_installs_every_package_file(tmp_path: Path) -> None:
    """What `pip install` makes of the context (as the Dockerfile runs it) holds every file
    of the context's packages: sources, scenarios, templates, the example history."""
    context = build_context_tar()
    source = tmp_path / "src"
    with tarfile.open(fileobj=io.BytesIO(context)) as tar:
        tar.extractall(source, filter="data")
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
             "-w", str(tmp_path / "wheel")]
    if importlib.util.find_spec("setuptools") is not None:
        build += ["--no-build-isolation", "--no-index"]  # no index needed at all
    built = subprocess.run([*build, str(source)], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (tmp_path / "wheel").glob("starquake-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        installed = {n for n in archive.namelist() if ".dist-info/" not in n}
    packaged = {n for n in _members(context) if n not in ("Dockerfile", "pyproject.toml")}
    assert installed == packaged


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
              f"{image.python} -c 'import impl; print(\"impl from\", impl.__file__)' && "
              "iptables -S INPUT")
    output = docker_client.containers.run(
        image.tag, ["sh", "-c", script], remove=True, init=True, cap_add=["NET_ADMIN"],
        network_mode="none", volumes=image.volumes, environment=dict(image.environment),
        stderr=True).decode()
    assert "openjdk" in output.lower()
    assert "python ok" in output
    # The nodes run the harness's own code, whichever checkout it was imported from.
    assert f"impl from {Path(harness.__file__).resolve().parents[1] / 'impl'}" in output
    assert "-P INPUT ACCEPT" in output
