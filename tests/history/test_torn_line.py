"""A torn last line is the start of a JSON object's UTF-8 encoding and nothing else: a
history whose tail is binary, or text no JSON object starts with, is bad input naming its
line (exit 3), not a torn write judged `unknown`, and refusing it leaves the file as it
was."""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys
from pathlib import Path

import pytest

from history.reader import HistoryError, parquet_path, to_parquet
from history.torn_line import NotTorn, check_torn

EXAMPLE = Path(__file__).resolve().parents[2] / "history" / "examples" / "split-topic"
EVENTS = EXAMPLE.joinpath("history.jsonl").read_bytes().splitlines(keepends=True)[:3]
EVENT = (b'{"index": 3, "time": 3000, "process": "p\xc3\xa9", "type": "ok", "f": "send", '
         b'"value": [1, -0.5e-3, true, null, "a\\u00e9\\n"], "detail": "{}"}')
BINARY = random.Random(7).randbytes(64 * 1024).replace(b"\n", b"\x00")


def test_every_prefix_of_an_event_is_a_torn_line() -> None:
    """Cut anywhere, inside a string, a number, a literal, an escape or a character of two
    bytes."""
    for end in range(len(EVENT)):
        check_torn(EVENT[:end])


@pytest.mark.parametrize(("tail", "why"), [
    (BINARY, "is not UTF-8 text"),
    (b"\x00\x00\x00\x00", "a history line starts with '{'"),
    (b"a log line, not an event", "a history line starts with '{'"),
    (b'["index", 3', "a history line starts with '{'"),
    (b'{"index" 3', "cannot come here"),
    (b'{"index": 3}{"index"', "follows a complete JSON object"),
    (b'{"index": 0x1', "cannot come here"),
    (b'{"index": "\\x', "cannot come here"),
])
def test_what_no_json_object_starts_with_is_not_torn(tail: bytes, why: str) -> None:
    with pytest.raises(NotTorn, match=why):
        check_torn(tail)


def _history(tmp_path: Path, tail: bytes) -> Path:
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"".join(EVENTS) + tail)
    return path


def test_a_binary_tail_is_refused_naming_its_line_and_the_file_is_kept(tmp_path: Path) -> None:
    path = _history(tmp_path, BINARY)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(HistoryError) as refused:
        to_parquet(path)
    assert str(refused.value).startswith(f"{path}:4: not a JSON object, nor one cut off "
                                         f"mid-write: byte ")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert not parquet_path(path).exists()


def test_a_torn_tail_is_still_dropped(tmp_path: Path) -> None:
    history = to_parquet(_history(tmp_path, EVENT[:40]))
    assert (history.events, history.truncated_tail) == (3, True)


def test_check_exits_3_on_a_binary_tail(tmp_path: Path) -> None:
    path = _history(tmp_path, BINARY)
    done = subprocess.run([sys.executable, "-m", "starquake", "check", str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"starquake: {path}:4: not a JSON object, nor one cut off "
                           f"mid-write: byte ")
