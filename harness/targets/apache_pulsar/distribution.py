"""The official Apache Pulsar binary distribution, resolved through Maven and kept in a
cache outside the repository.

The distribution is Maven Central's `org.apache.pulsar:pulsar-server-distribution:<v>`
artifact with classifier `bin`, type `tar.gz` (`apache-pulsar-<v>-bin.tar.gz`: `bin/`,
`conf/`, `lib/`). `mvn` copies it into `<cache>/<v>/`, where it is unpacked once; the cache
is `$STARQUAKE_PULSAR_CACHE`, else `$XDG_CACHE_HOME/starquake/pulsar`, else
`~/.cache/starquake/pulsar`. The lock file beside this module (`pulsar-lock.toml`) names
the version runs use and the tarball's SHA-512: every fetch of that version checks the
tarball against it, so a run never starts a distribution other than the one recorded, and
a fetch of another version records that one instead.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from history.errors import BadInput, EnvironmentProblem

LOCK_FILE = Path(__file__).with_name("pulsar-lock.toml")
CACHE_ENV = "STARQUAKE_PULSAR_CACHE"
GROUP, ARTIFACT, CLASSIFIER, PACKAGING = ("org.apache.pulsar", "pulsar-server-distribution",
                                          "bin", "tar.gz")
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
"""Pinned, so every machine resolves the artifact with the same plugin."""
MVN_TIMEOUT_S = 1200.0
VERSION_PATTERN = re.compile(r"\d+\.\d+\.\d+")
LAUNCHER = Path("bin") / "pulsar"

Runner = Callable[[Sequence[str], Path], subprocess.CompletedProcess[str]]
"""Runs a command in a directory, capturing its output (tests give a stand-in)."""


class DistributionUnavailable(EnvironmentProblem):
    """The distribution cannot be had: no mvn or java, a version Maven does not resolve, a
    tarball whose checksum is not the recorded one."""


@dataclass(frozen=True)
class Lock:
    """What `pulsar-lock.toml` records."""

    version: str
    sha512: str


@dataclass(frozen=True)
class Distribution:
    """One version, fetched, checked and unpacked."""

    version: str
    tarball: Path
    home: Path
    """The unpacked `apache-pulsar-<v>/`: what the nodes mount and run."""
    sha512: str

    @property
    def launcher(self) -> Path:
        return self.home / LAUNCHER


def cache_root() -> Path:
    """Where distributions are kept (module docstring)."""
    if configured := os.environ.get(CACHE_ENV):
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "starquake" / "pulsar"


def artifact(version: str) -> str:
    return f"{GROUP}:{ARTIFACT}:{version}:{PACKAGING}:{CLASSIFIER}"


def read_lock(path: Path = LOCK_FILE) -> Lock | None:
    """The recorded version and checksum; None when nothing was ever fetched."""
    if not path.exists():
        return None
    try:
        data = tomllib.loads(path.read_text())
        return Lock(str(data["version"]), str(data["sha512"]))
    except (tomllib.TOMLDecodeError, KeyError) as exc:
        raise BadInput(f"{path}: not a Pulsar lock file ({exc}); fetch again with "
                       "`starquake pulsar fetch --version V`") from None


def write_lock(lock: Lock, path: Path = LOCK_FILE) -> None:
    path.write_text(
        "# Written by `starquake pulsar fetch`: the Apache Pulsar distribution runs use, and\n"
        "# the SHA-512 of its tarball, which every later fetch checks.\n"
        f'version = "{lock.version}"\n'
        f'artifact = "{artifact(lock.version)}"\n'
        f'sha512 = "{lock.sha512}"\n')


def _run(argv: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True,
                          timeout=MVN_TIMEOUT_S, check=False)


def _sha512(path: Path) -> str:
    digest = hashlib.sha512()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def _maven_error(output: str) -> str:
    """Why Maven failed, in one line: its first error, without the goal's preamble and the
    pointer to its help page."""
    for line in ANSI_ESCAPE.sub("", output).splitlines():
        if line.startswith("[ERROR]") and line[7:].strip():
            text = line[7:].strip().partition(" -> [Help")[0]
            text = text.partition("standalone-pom: ")[2] or text
            return text if len(text) <= 300 else text[:297] + "..."
    return output.strip().splitlines()[-1] if output.strip() else "no output"


def _require_tools() -> None:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            raise DistributionUnavailable(f"{tool} not found on PATH: fetching Apache Pulsar "
                                          "needs Maven and a Java runtime (scripts/setup.sh)")


def _download(version: str, directory: Path, run: Runner) -> Path:
    """`mvn dependency:copy` of the tarball into `directory` (through a temporary directory
    beside it, so an interrupted copy leaves nothing that looks whole)."""
    _require_tools()
    created = not directory.exists()
    directory.mkdir(parents=True, exist_ok=True)
    try:
        return _copy(version, directory, run)
    except BaseException:
        if created and not any(directory.iterdir()):
            directory.rmdir()
        raise


def _copy(version: str, directory: Path, run: Runner) -> Path:
    # -U: a release published since Maven last looked is seen, not a cached "not found".
    with tempfile.TemporaryDirectory(dir=directory, prefix=".download-") as scratch:
        result = run(["mvn", "-B", "-q", "-U", "--no-transfer-progress",
                      f"{DEPENDENCY_PLUGIN}:copy",
                      f"-Dartifact={artifact(version)}", f"-DoutputDirectory={scratch}"],
                     Path(scratch))
        copied = list(Path(scratch).glob(f"*.{PACKAGING}"))
        if result.returncode != 0 or len(copied) != 1:
            raise DistributionUnavailable(
                f"Apache Pulsar {version} does not resolve through Maven "
                f"({artifact(version)}): {_maven_error(result.stdout + result.stderr)}")
        target = directory / f"apache-pulsar-{version}-bin.{PACKAGING}"
        copied[0].replace(target)
        return target


def _unpack(tarball: Path, version: str) -> Path:
    """The tarball's `apache-pulsar-<v>/`, unpacked beside it once (into a temporary
    directory first, renamed into place whole)."""
    home = tarball.parent / f"apache-pulsar-{version}"
    if (home / LAUNCHER).exists():
        return home
    with tempfile.TemporaryDirectory(dir=tarball.parent, prefix=".unpack-") as scratch:
        with tarfile.open(tarball) as archive:
            archive.extractall(scratch, filter="tar")
        unpacked = Path(scratch) / home.name
        if not (unpacked / LAUNCHER).exists():
            raise DistributionUnavailable(f"{tarball} holds no {home.name}/{LAUNCHER}: not "
                                          "an Apache Pulsar binary distribution")
        if home.exists():  # a partial copy from an older starquake: replace it
            shutil.rmtree(home)
        unpacked.rename(home)
    return home


def fetch(version: str | None = None, *, lock_file: Path = LOCK_FILE,
          cache: Path | None = None, run: Runner = _run) -> Distribution:
    """Version `version` (by default the lock file's), downloaded unless the cache has it,
    checked against the lock file when it records that version (and recorded there when it
    records another or none), and unpacked. Raises DistributionUnavailable (exit 4) for a
    missing tool, a version Maven does not resolve, or a checksum that is not the recorded
    one; BadInput for a version that is not `X.Y.Z`."""
    lock = read_lock(lock_file)
    if version is None:
        if lock is None:
            raise DistributionUnavailable(f"{lock_file} is missing: name a version, "
                                          "`starquake pulsar fetch --version V`")
        version = lock.version
    if not VERSION_PATTERN.fullmatch(version):
        raise BadInput(f"--version: expected a release such as 4.0.8, got {version!r}")
    directory = (cache or cache_root()) / version
    tarball = directory / f"apache-pulsar-{version}-bin.{PACKAGING}"
    if not tarball.exists():
        tarball = _download(version, directory, run)
    sha512 = _sha512(tarball)
    if lock is not None and lock.version == version:
        if sha512 != lock.sha512:
            raise DistributionUnavailable(
                f"{tarball}: SHA-512 {sha512[:16]}... is not the {lock.sha512[:16]}... "
                f"{lock_file.name} records for {version}; delete the file to download it "
                "again, or find out who changed it")
    else:
        write_lock(Lock(version, sha512), lock_file)
    return Distribution(version, tarball, _unpack(tarball, version), sha512)
