"""The history writer keeps the spec's promises even when the harness dies mid-run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from history.reader import to_parquet
from history.writer import ClientProcess, HistoryWriter, SequentialIds

_KEEP_WRITING = """
import sys
from pathlib import Path
from history.writer import ClientProcess, HistoryWriter, SequentialIds
writer = HistoryWriter(Path(sys.argv[1]))
client = ClientProcess(writer, SequentialIds("p"))
n = 0
while n < 5_000_000:  # bounded; the test kills it long before
    client.invoke("send", value=f"m{n}", key="k", topic="persistent://t/ns/x")
    client.complete("ok", value=f"m{n}", position=f"1:{n}")
    if n == 1000:
        print("writing", flush=True)
    n += 1
"""


def _events(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_killed_writer_leaves_a_checkable_prefix(tmp_path: Path) -> None:
    """SIGKILL can cut the one `write` of a line that crosses a page of the file (the kernel
    stops a write between pages for a fatal signal), so a torn last line is possible, never
    a torn line before it; the reader drops it and says so."""
    path = tmp_path / "history.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", _KEEP_WRITING, str(path)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
        time.sleep(0.2)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    data = path.read_bytes()
    torn = not data.endswith(b"\n")
    whole = data[:data.rfind(b"\n") + 1]
    events = [orjson.loads(line) for line in whole.splitlines()]
    assert len(events) > 2000
    assert [e["index"] for e in events] == list(range(len(events)))
    read = to_parquet(path)
    assert (read.events, read.truncated_tail) == (len(events), torn)


def test_concurrent_recorders_keep_index_and_time_order(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as writer:
        ids = SequentialIds("p")

        def work() -> None:
            client = ClientProcess(writer, ids)
            for n in range(2000):
                client.invoke("send", value=f"{client.process}-{n}")
                client.complete("ok")

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    events = _events(path)
    assert len(events) == 4 * 2 * 2000
    assert [e["index"] for e in events] == list(range(len(events)))
    times = [e["time"] for e in events]
    assert times == sorted(times)


def test_process_is_retired_after_info(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path / "history.jsonl") as writer:
        client = ClientProcess(writer, SequentialIds("p"))
        client.invoke("send", value="m0")
        client.complete("info", error="Timeout")
        client.invoke("send", value="m1")
        client.complete("ok")
    first, info, second, ok = _events(tmp_path / "history.jsonl")
    assert first["process"] == info["process"] == "p0"
    assert second["process"] == ok["process"] == "p1"
    assert info["error"] == "Timeout"


def test_one_operation_outstanding_per_process(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path / "history.jsonl") as writer:
        client = ClientProcess(writer, SequentialIds("p"))
        client.invoke("send", value="m0")
        with pytest.raises(RuntimeError, match="outstanding"):
            client.invoke("send", value="m1")


def test_detail_is_json_text_and_none_fields_are_left_out(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path / "history.jsonl") as writer:
        writer.record("nemesis", "ok", "partition", detail={"targets": ["b1"]}, node=None)
    (event,) = _events(tmp_path / "history.jsonl")
    assert event["detail"] == '{"targets":["b1"]}'
    assert "node" not in event


def test_never_appends_to_an_existing_history(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text("")
    with pytest.raises(FileExistsError):
        HistoryWriter(path)


def test_message_ids_are_unique_across_threads() -> None:
    ids = SequentialIds("m")
    seen: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        mine = [ids.fresh() for _ in range(5000)]
        with lock:
            seen.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 20000
