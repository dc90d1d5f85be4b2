"""Bad histories are refused with exit 3 and a message naming file, line (or row) and field;
a run cut off mid-write still checks."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from checkers.load import prepare
from history.reader import HistoryError

GOOD = [
    {"index": 0, "time": 0, "process": "p0", "type": "invoke", "f": "send", "value": "m1"},
    {"index": 1, "time": 5, "process": "p0", "type": "ok", "f": "send", "position": "1:0"},
    {"index": 2, "time": 9, "process": "c0", "type": "ok", "f": "recv", "value": "m1",
     "future_field": {"kept": "and ignored"}},
]


def _write(path: Path, events: list[dict], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + tail)
    return path


def _with(change: dict, at: int = 1) -> list[dict]:
    events = [dict(e) for e in GOOD]
    for k, v in change.items():
        if v is None:
            events[at].pop(k)
        else:
            events[at][k] = v
    return events


@pytest.mark.parametrize(("events", "line", "field"), [
    (_with({"process": None}), 2, "process"),
    (_with({"index": 0}), 2, "index"),
    (_with({"time": -1}), 2, "time"),
    (_with({"time": "soon"}), 2, "time"),
    (_with({"type": "done"}), 2, "type"),
    (_with({"segment": "seven"}, at=2), 3, "segment"),
    (_with({"index": True}, at=0), 1, "index"),
])
def test_malformed_event_names_file_line_and_field(tmp_path: Path, events, line, field) -> None:
    path = _write(tmp_path / "history.jsonl", events)
    with pytest.raises(HistoryError) as error:
        prepare(path)
    assert f"{path}:{line}" in str(error.value)
    assert repr(field) in str(error.value)


def test_malformed_json_in_the_middle_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(json.dumps(GOOD[0]) + "\n{not json\n" + json.dumps(GOOD[2]) + "\n")
    with pytest.raises(HistoryError, match=r"history.jsonl:2: not a JSON object"):
        prepare(path)


def test_blank_line_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(json.dumps(GOOD[0]) + "\n\n" + json.dumps(GOOD[1]) + "\n")
    with pytest.raises(HistoryError, match=r"history.jsonl:2"):
        prepare(path)


def test_torn_last_line_is_dropped(tmp_path: Path) -> None:
    path = _write(tmp_path / "history.jsonl", GOOD, tail='{"index": 3, "ti')
    prepared = prepare(path)
    assert prepared.truncated_tail
    assert prepared.events == 3
    assert pq.read_table(prepared.parquet).column("index").to_pylist() == [0, 1, 2]


def test_parquet_is_validated_too(tmp_path: Path) -> None:
    table = pa.table({"index": [0, 2, 1], "time": [0, 1, 2], "process": ["p0"] * 3,
                      "type": ["ok"] * 3, "f": ["recv"] * 3})
    pq.write_table(table, tmp_path / "history.parquet")
    with pytest.raises(HistoryError, match=r"row 2, field 'index'"):
        prepare(tmp_path / "history.parquet")
    pq.write_table(table.drop(["process"]), tmp_path / "missing.parquet")
    with pytest.raises(HistoryError, match=r"required column 'process'"):
        prepare(tmp_path / "missing.parquet")


# Validation runs on the driver before Spark starts, so a cluster master (none listens
# here) changes nothing.
@pytest.mark.parametrize("master", [[], ["--spark-master", "spark://127.0.0.1:9"]])
def test_cli_exits_3_with_one_line(tmp_path: Path, master: list[str]) -> None:
    path = _write(tmp_path / "history.jsonl", _with({"f": None}))
    done = subprocess.run([sys.executable, "-m", "starquake", "check", str(path), *master],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3
    assert done.stderr.strip().splitlines() == [
        f"starquake: {path}:2: field 'f' is missing"]


def test_cli_usage_error_exits_3(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "starquake", "check", str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3
    assert "does not exist" in done.stderr


def test_an_empty_history_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text("")
    with pytest.raises(HistoryError, match=r"history.jsonl: no events"):
        prepare(path)


def test_a_parquet_file_corrupt_in_the_middle_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "history.parquet"
    count = 200_000
    pq.write_table(pa.table({"index": list(range(count)), "time": list(range(count)),
                             "process": [f"p{n % 7}" for n in range(count)],
                             "type": ["ok"] * count, "f": ["recv"] * count,
                             "value": [f"m{n}" for n in range(count)]}), path,
                   row_group_size=20_000)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 4096] = bytes(4096)
    path.write_bytes(data)
    with pytest.raises(HistoryError, match=r"history.parquet: not a readable Parquet file"):
        prepare(path)


@pytest.mark.parametrize("last_newline", [True, False], ids=["ended", "unended"])
def test_long_lines_are_read(tmp_path: Path, last_newline: bool) -> None:
    """A 20 MB value inside the file and a last line over 2 MiB: longer than the blocks the
    reader parses and than the tail it looks at for a torn line."""
    huge = dict(GOOD[0], value="v" * (20 << 20))
    long_last = dict(GOOD[2], value="w" * ((2 << 20) + 5))
    path = tmp_path / "history.jsonl"
    _write(path, [huge, GOOD[1]])
    with path.open("a") as f:
        f.write(json.dumps(long_last) + ("\n" if last_newline else ""))
    prepared = prepare(path)
    assert (prepared.events, prepared.truncated_tail) == (3, False)
    values = pq.read_table(prepared.parquet).column("value").to_pylist()
    assert [len(v or "") for v in values] == [20 << 20, 0, (2 << 20) + 5]


def test_an_internal_error_does_not_exit_as_invalid(tmp_path: Path) -> None:
    """A fault of starquake itself exits 4 with a last line saying so, never 1."""
    path = _write(tmp_path / "history.jsonl", GOOD)
    crash = ("import sys, checkers.load as load\n"
             "def broken(path): raise RuntimeError('boom')\n"
             "load.prepare = broken\n"
             "import checkers.cli; checkers.cli.prepare = broken\n"
             "from starquake.cli import main; main(['check', sys.argv[1]])\n")
    done = subprocess.run([sys.executable, "-c", crash, str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 4
    assert done.stderr.strip().splitlines()[-1] == "starquake: internal error: RuntimeError: boom"


def test_a_killed_check_leaves_the_run_directory_as_it_was(tmp_path: Path) -> None:
    """Killed while converting and pairing, a check leaves no partial Parquet or paired
    files; the next preparation removes the dead check's hidden temporaries and succeeds."""
    from checkers.synthetic import SyntheticSpec, write_jsonl

    run = tmp_path / "run"
    run.mkdir()
    history = run / "history.jsonl"
    events = write_jsonl(SyntheticSpec(messages=60_000), history)
    before = history.read_bytes()
    check = subprocess.Popen([sys.executable, "-m", "starquake", "check", str(run)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not list(run.glob(".*.tmp")):
            assert check.poll() is None, "the check ended before it wrote anything"
            assert time.monotonic() < deadline, "no temporary file appeared"
            time.sleep(0.01)
    finally:
        check.kill()
        check.wait(timeout=30)
    assert sorted(p.name for p in run.iterdir() if not p.name.startswith(".")) == [
        "history.jsonl"]
    assert history.read_bytes() == before

    prepared = prepare(history)
    assert prepared.events == events
    assert sorted(p.name for p in run.iterdir()) == [
        "history.jsonl", "history.paired", "history.parquet"]
