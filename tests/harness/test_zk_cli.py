"""`starquake zk up`: an ensemble in the foreground that a signal stops cleanly;
`starquake zk ls` and `get`: nodes a digest ACL closes are read with the digest file and
refused, saying so, without it."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from history.errors import BAD_INPUT
from impl.metadata.store import MetadataStore
from starquake.cli import main

pytestmark = pytest.mark.zk


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_zk_up_serves_until_signalled_then_stops_its_java_processes(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "starquake", "zk", "up", "--nodes", "1", "--dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pids: list[int] = []
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if line.startswith("node "):
                break
        text = "".join(lines)
        connect = re.search(r"^connect string: (\S+)$", text, re.M)
        assert connect, f"no connect string in: {text!r}"
        pids = [int(pid) for pid in re.findall(r"^node \d+: pid (\d+)", text, re.M)]
        assert len(pids) == 1
        with MetadataStore.connect(connect.group(1)) as store:
            store.create("/hello", b"world")
            assert store.get("/hello").data == b"world"

        process.send_signal(stop_signal)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:  # the test failed early: still stop ZooKeeper cleanly
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    assert process.returncode == 0, err
    assert "stopped" in out
    assert (tmp_path / "zk1" / "zookeeper.log").exists()
    for pid in pids:
        cmdline = Path(f"/proc/{pid}/cmdline")
        assert not cmdline.exists() or b"QuorumPeerMain" not in cmdline.read_bytes()


DIGEST = "starquake:a-password"


def test_zk_ls_and_get_read_nodes_closed_by_a_digest_with_the_digest_file_only(
        zk_store: Callable[..., MetadataStore], zk_connect_string: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    zk_store(digest=DIGEST).create("/guarded/node", b"metadata")
    digest_file = tmp_path / "zookeeper-digest"
    digest_file.write_text(DIGEST + "\n")
    with_digest = ("--digest-file", str(digest_file))

    assert run_cli("zk", "ls", zk_connect_string, "/guarded", *with_digest,
                   capsys=capsys) == (0, "node\n", "")
    assert run_cli("zk", "get", zk_connect_string, "/guarded/node", *with_digest,
                   capsys=capsys) == (0, "metadata\n", "")
    for command in ("ls", "get"):
        code, out, err = run_cli("zk", command, zk_connect_string, "/guarded/node",
                                 capsys=capsys)
        assert (code, out) == (BAD_INPUT, "")
        assert err == (f"starquake: ZooKeeper refused to read /guarded/node in "
                       f"{zk_connect_string}: its ACL does not admit a client without "
                       "credentials (give them with --digest-file FILE)\n")


def run_cli(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err
