"""The node image every starquake container runs, built with or without a registry.

Two ways to the same image contract (a `python` that imports the project, a `java` and the
ZooKeeper jars, `iptables`, `sh` and `sleep`):

- **import** (the default when this machine has the runtime, which `scripts/setup.sh`
  installs): a root file system of a few directories and files, turned into an image with
  `docker import`. No registry is contacted. Containers bind-mount this machine's runtime
  read-only at the same paths (`/usr`, the Python installation and `.venv`, the
  repository), so they run exactly the code and interpreter the harness runs.
- **dockerfile** (`harness/targets/docker/Dockerfile`): `FROM debian:bookworm-slim`, installing the
  same Debian packages and the project: its packages as this process imports them (from a
  checkout or site-packages) with a pyproject.toml generated from the installed
  distribution's metadata. Needs an engine that can pull the base image; used when asked
  for, or when this machine lacks the runtime the import path mounts.

Images are tagged with a hash of what they contain (the root file system, or the build
context), so a rebuild happens only when that content changes.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import io
import json
import logging
import re
import shutil
import sys
import tarfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import docker.errors
from docker import DockerClient

import harness
from harness.targets.local.zookeeper import CLASSPATH as ZOOKEEPER_CLASSPATH
from history.errors import EnvironmentProblem

log = logging.getLogger(__name__)

ImageSource = Literal["auto", "import", "dockerfile"]
IMAGE_SOURCES: tuple[ImageSource, ...] = ("auto", "import", "dockerfile")
REPOSITORY = "starquake-node"
DOCKERFILE_DIR = Path(__file__).parent
# What the Dockerfile build copies: these packages, found where Python imports them from (a
# checkout or site-packages alike), and a pyproject.toml generated from the installed
# distribution's metadata (build_context_tar), enough to `pip install` them in the image.
DISTRIBUTION = "starquake"
BUILD_BACKEND = ("setuptools>=68", "setuptools.build_meta")
BUILD_CONTEXT_PACKAGES = ("starquake", "history", "harness", "impl", "wire", "nemesis", "checkers",
                          "scenarios", "reports")
# The Dockerfile's interpreter and its PATH (see harness/targets/docker/Dockerfile).
DOCKERFILE_PYTHON = "/opt/starquake/venv/bin/python"
SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class ImageBuildFailed(EnvironmentProblem):
    """The node image could not be made; the message says which path failed and why."""


class HostRuntimeMissing(EnvironmentProblem):
    """This machine lacks part of the runtime that imported images mount."""


@dataclass(frozen=True)
class NodeImage:
    """An image plus what a container of it needs: the interpreters to call and, for an
    imported image, the host directories to mount read-only at the same paths."""

    tag: str
    source: Literal["import", "dockerfile"]
    python: str
    java: str
    read_only_mounts: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)

    @property
    def volumes(self) -> dict[str, dict[str, str]]:
        """The mounts in the form the docker SDK takes."""
        return {path: {"bind": path, "mode": "ro"} for path in self.read_only_mounts}


@dataclass(frozen=True)
class HostRuntime:
    """The interpreters of this machine and the directories that hold them."""

    python: Path
    java: Path
    read_only_mounts: tuple[str, ...]
    source: Path
    """Where the harness's own packages were imported from: the nodes import `impl` from
    there too, so they run the code of the checkout that deployed them even when the
    virtual environment's install points at another (a checkout on PYTHONPATH)."""


def _under(path: Path, parents: Iterable[Path]) -> bool:
    return any(p in path.parents for p in parents)


def host_runtime() -> HostRuntime:
    """What an imported image must mount to run `python -m impl...`, ZooKeeper and
    iptables. Raises HostRuntimeMissing naming the missing piece."""
    for top in ("bin", "lib", "lib64"):
        if Path(f"/{top}").resolve() != Path(f"/usr/{top}"):
            raise HostRuntimeMissing(f"/{top} is not a link into /usr (no merged /usr); "
                                     "use --image-source dockerfile")
    java_on_path = shutil.which("java")
    if java_on_path is None:
        raise HostRuntimeMissing("java not found on PATH; run scripts/setup.sh")
    java = Path(java_on_path).resolve()
    for needed in (*ZOOKEEPER_CLASSPATH, Path("/usr/sbin/iptables"), Path("/usr/bin/sleep")):
        if not needed.exists():
            raise HostRuntimeMissing(f"{needed} is missing; run scripts/setup.sh")
    wanted = [
        Path("/usr"),
        Path("/etc/alternatives"),  # iptables and friends are links through it
        Path("/etc/ld.so.cache"),
        java.parent.parent,  # the JDK, wherever it is installed
        # The JDK's configuration lives under /etc, reached by links from its lib directory.
        (java.parent.parent / "lib" / "jvm.cfg").resolve().parent,
        # The interpreter's installation, its virtual environment, and the project's
        # source (which an editable install points at).
        Path(sys.base_prefix).resolve(),
        Path(sys.prefix).resolve(),
        source := Path(harness.__file__).resolve().parents[1],
    ]
    mounts = [p for p in dict.fromkeys(wanted)
              if not _under(p, [other for other in wanted if other != p])]
    for mount in mounts:
        if not mount.exists():
            raise HostRuntimeMissing(f"{mount} is missing; run scripts/setup.sh")
    return HostRuntime(python=Path(sys.prefix) / "bin" / "python", java=java,
                       read_only_mounts=tuple(str(m) for m in mounts), source=source)


def _add(tar: tarfile.TarFile, name: str, *, kind: bytes = tarfile.DIRTYPE, mode: int = 0o755,
         data: bytes = b"", link: str = "") -> None:
    """One member with fixed owner and time, so equal content gives equal bytes."""
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime, info.uid, info.gid = kind, mode, 0, 0, 0
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def root_filesystem_tar() -> bytes:
    """The imported image's whole content. /usr is an empty mount point; /bin, /lib and
    /lib64 link into it as on the host. /sbin is a real directory because the engine mounts
    its init (`docker-init`) there before the /usr mount would hide a link's target."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for directory in ("data", "dev", "etc", "proc", "root", "run", "sbin", "sys", "usr",
                          "var"):
            _add(tar, directory)
        for sticky in ("tmp", "var/tmp"):
            _add(tar, sticky, mode=0o1777)
        for top in ("bin", "lib", "lib64"):
            _add(tar, top, kind=tarfile.SYMTYPE, link=f"usr/{top}", mode=0o777)
        files = {
            "etc/passwd": b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n",
            "etc/group": b"root:x:0:\nnogroup:x:65534:\n",
            # The engine provides /etc/hosts and /etc/resolv.conf; this says to use them.
            "etc/nsswitch.conf": b"passwd: files\ngroup: files\nhosts: files dns\n",
        }
        for name, data in files.items():
            _add(tar, name, kind=tarfile.REGTYPE, mode=0o644, data=data)
    return buffer.getvalue()


def _image_exists(client: DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def imported_image(client: DockerClient) -> NodeImage:
    """The registry-free image (built once per root file system content)."""
    runtime = host_runtime()
    rootfs = root_filesystem_tar()
    tag = f"{REPOSITORY}:rootfs-{hashlib.sha256(rootfs).hexdigest()[:12]}"
    if not _image_exists(client, tag):
        repository, version = tag.split(":")
        try:
            client.api.import_image_from_data(
                rootfs, repository=repository, tag=version,
                changes=[f"ENV PATH={SEARCH_PATH}", "WORKDIR /data"])
        except docker.errors.APIError as exc:
            raise ImageBuildFailed(f"docker import of the node root file system failed: "
                                   f"{exc.explanation or exc}") from None
        log.info("imported %s", tag)
    return NodeImage(tag=tag, source="import", python=str(runtime.python),
                     java=str(runtime.java), read_only_mounts=runtime.read_only_mounts,
                     environment={"PYTHONDONTWRITEBYTECODE": "1",
                                  "PYTHONPATH": str(runtime.source)})


def package_files(package: str) -> dict[str, Path]:
    """Every file of an importable top-level package (sources and data, no caches), by its
    path in the build context. importlib locates the package, so this is the code this
    process runs, from a checkout or from site-packages."""
    try:
        root = Path(str(importlib.resources.files(package)))
    except ModuleNotFoundError:
        raise ImageBuildFailed(f"package {package!r} of the build context cannot be "
                               "imported") from None
    return {f"{package}/{p.relative_to(root).as_posix()}": p
            for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def _toml_list(items: Iterable[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


def install_metadata(files: Iterable[str]) -> bytes:
    """A minimal pyproject.toml that installs the context's packages as the distribution
    installed here: its name, version, Python requirement, console scripts and pinned
    dependencies (without extras) come from `importlib.metadata`, never from a
    pyproject.toml on disk (an installed package has none). `files` are the context's
    package files; every one that is not Python source is declared package data."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise ImageBuildFailed(
            f"the {DISTRIBUTION} distribution is not installed, so its pinned dependencies "
            "are unknown; install it (pip install -e . in a checkout) before building the "
            "node image") from None
    requires = [r for r in dist.requires or ()
                if not re.search(r"\bextra\b", r.partition(";")[2])]
    scripts = sorted((e.name, e.value) for e in dist.entry_points
                     if e.group == "console_scripts")
    data: dict[str, list[str]] = {}
    for name in files:
        package, _, inside = name.partition("/")
        if not name.endswith(".py"):
            data.setdefault(package, []).append(inside)
    include = [f"{p}{sub}" for p in BUILD_CONTEXT_PACKAGES for sub in ("", ".*")]
    lines = [
        "# Generated by harness.targets.docker.images from the installed distribution's "
        "metadata.",
        "[build-system]",
        f"requires = {_toml_list([BUILD_BACKEND[0]])}",
        f"build-backend = {json.dumps(BUILD_BACKEND[1])}",
        "",
        "[project]",
        f"name = {json.dumps(dist.metadata['Name'])}",
        f"version = {json.dumps(dist.version)}",
        *([f"requires-python = {json.dumps(dist.metadata['Requires-Python'])}"]
          if dist.metadata["Requires-Python"] else []),
        "dependencies = [",
        *(f"    {json.dumps(r)}," for r in requires),
        "]",
        "",
        "[project.scripts]",
        *(f"{json.dumps(name)} = {json.dumps(value)}" for name, value in scripts),
        "",
        "[tool.setuptools.packages.find]",
        f"include = {_toml_list(include)}",
        "",
        "[tool.setuptools.package-data]",
        *(f"{json.dumps(package)} = {_toml_list(sorted(names))}"
          for package, names in sorted(data.items())),
    ]
    return ("\n".join(lines) + "\n").encode()


def build_context_tar() -> bytes:
    """The Dockerfile build's context, with fixed times: the Dockerfile, every file of the
    packages (as installed: no caches, no tests, no runs) and the generated pyproject.toml
    that installs them (`install_metadata`)."""
    files: dict[str, Path] = {}
    for package in BUILD_CONTEXT_PACKAGES:
        files.update(package_files(package))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        _add(tar, "Dockerfile", kind=tarfile.REGTYPE, mode=0o644,
             data=(DOCKERFILE_DIR / "Dockerfile").read_bytes())
        _add(tar, "pyproject.toml", kind=tarfile.REGTYPE, mode=0o644,
             data=install_metadata(files))
        for name, path in files.items():
            _add(tar, name, kind=tarfile.REGTYPE, mode=0o644, data=path.read_bytes())
    return buffer.getvalue()


def dockerfile_image(client: DockerClient) -> NodeImage:
    """The image from harness/targets/docker/Dockerfile (pulls its base image)."""
    context = build_context_tar()
    tag = f"{REPOSITORY}:build-{hashlib.sha256(context).hexdigest()[:12]}"
    if not _image_exists(client, tag):
        try:
            client.images.build(fileobj=io.BytesIO(context), custom_context=True, tag=tag,
                                rm=True, forcerm=True)
        except (docker.errors.BuildError, docker.errors.APIError) as exc:
            reason = getattr(exc, "msg", None) or getattr(exc, "explanation", None) or exc
            raise ImageBuildFailed(
                f"building {DOCKERFILE_DIR / 'Dockerfile'} failed: {reason}; without a "
                "reachable registry use --image-source import") from None
        log.info("built %s", tag)
    return NodeImage(tag=tag, source="dockerfile", python=DOCKERFILE_PYTHON, java="java",
                     environment={"PYTHONDONTWRITEBYTECODE": "1"})


def node_image(client: DockerClient, source: ImageSource = "auto") -> NodeImage:
    """The node image, built if needed. `auto` imports when this machine has the runtime
    and falls back to the Dockerfile otherwise."""
    if source == "import":
        return imported_image(client)
    if source == "dockerfile":
        return dockerfile_image(client)
    try:
        return imported_image(client)
    except HostRuntimeMissing as exc:
        log.info("import path unavailable (%s); building from the Dockerfile", exc)
        return dockerfile_image(client)
