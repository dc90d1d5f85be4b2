"""`starquake pulsar fetch` without Maven Central: a stand-in for `mvn` that copies a small
tarball shaped like the distribution, so the cache, the lock file, the checksum check and
the errors are exercised in seconds."""

from __future__ import annotations

import io
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.targets.apache_pulsar.distribution import (
    DistributionUnavailable,
    fetch,
    read_lock,
)
from history.errors import BAD_INPUT, ENVIRONMENT, BadInput


def _tarball(version: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b"#!/usr/bin/env bash\n"
        info = tarfile.TarInfo(f"apache-pulsar-{version}/bin/pulsar")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class FakeMaven:
    """Answers `mvn ... copy -Dartifact=... -DoutputDirectory=D` by writing the tarball
    into D, or fails as Maven does for a version it cannot find."""

    def __init__(self, known: set[str]) -> None:
        self.known = known
        self.calls = 0

    def __call__(self, argv: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        self.calls += 1
        options = dict(a.removeprefix("-D").split("=", 1) for a in argv if a.startswith("-D"))
        version = options["artifact"].split(":")[2]
        if version not in self.known:
            return subprocess.CompletedProcess(list(argv), 1, "\x1b[0m[ERROR] Failed to execute "
                                               "goal x on project standalone-pom: Could not "
                                               f"find artifact {version} -> [Help 1]\n", "")
        out = Path(options["outputDirectory"]) / f"pulsar-server-distribution-{version}-bin.tar.gz"
        out.write_bytes(_tarball(version))
        return subprocess.CompletedProcess(list(argv), 0, "", "")


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """`java` and `mvn` on PATH (never run: the stand-in runner takes their place)."""
    bin_dir = tmp_path / "tools"
    bin_dir.mkdir()
    for tool in ("java", "mvn"):
        (bin_dir / tool).write_text("#!/bin/sh\nexit 1\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def test_fetch_records_the_version_then_checks_it(tmp_path: Path, tools: Path) -> None:
    lock, cache, maven = tmp_path / "pulsar-lock.toml", tmp_path / "cache", FakeMaven({"9.9.9"})
    first = fetch("9.9.9", lock_file=lock, cache=cache, run=maven)
    assert first.launcher.exists() and first.home == cache / "9.9.9" / "apache-pulsar-9.9.9"
    recorded = read_lock(lock)
    assert recorded is not None and recorded.version == "9.9.9"
    assert recorded.sha512 == first.sha512

    again = fetch(lock_file=lock, cache=cache, run=maven)  # the lock's version, from the cache
    assert again == first and maven.calls == 1

    first.tarball.write_bytes(_tarball("9.9.9") + b"tampered")
    with pytest.raises(DistributionUnavailable, match="SHA-512") as raised:
        fetch(lock_file=lock, cache=cache, run=maven)
    assert raised.value.exit_code == ENVIRONMENT


def test_a_version_maven_cannot_resolve_is_an_environment_problem(tmp_path: Path,
                                                                  tools: Path) -> None:
    lock, cache = tmp_path / "pulsar-lock.toml", tmp_path / "cache"
    with pytest.raises(DistributionUnavailable,
                       match=r"^Apache Pulsar 1\.2\.3 does not resolve through Maven .*"
                             r"Could not find artifact 1\.2\.3$"):
        fetch("1.2.3", lock_file=lock, cache=cache, run=FakeMaven(set()))
    assert not lock.exists() and not (cache / "1.2.3").exists()


def test_without_mvn_nothing_is_tried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    maven = FakeMaven({"9.9.9"})
    with pytest.raises(DistributionUnavailable, match="not found on PATH"):
        fetch("9.9.9", lock_file=tmp_path / "lock.toml", cache=tmp_path / "c", run=maven)
    assert maven.calls == 0


def test_a_malformed_version_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="--version") as raised:
        fetch("4.0;x", lock_file=tmp_path / "lock.toml", cache=tmp_path)
    assert raised.value.exit_code == BAD_INPUT
