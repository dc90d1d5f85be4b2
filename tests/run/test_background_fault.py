"""`starquake run` of a random schedule with a background fault, on local processes: the
topic's owner frozen past its session while other brokers are killed and started inside
the freeze. No fault inside strikes the frozen broker (its restart would end the freeze
early), and the freeze is what lets a broker with no fencing write after its successor
took over: `lost` with `no-fencing` on, `valid` without it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]

SCENARIO = """\
name = "background-fencing"
duration_s = 40
mutants = ["no-fencing"]

[topology]
clusters = ["a"]
zookeepers = 1
bookies = 1
brokers = 3
backend = "local"
session_timeout_ms = 4000

[workload]
kind = "topic"
rate = 50
keys = 4
producers = 2
consumers = 2
subscription_mode = "failover"

[nemesis]
schedule = "random"
faults = ["kill"]
interval_s = 6
duration_s = 1
background = "pause"
background_at_s = 4
background_s = 14
"""


def _run(tmp_path: Path, *flags: str) -> tuple[int, dict, list[dict]]:
    scenario = tmp_path / "background.toml"
    scenario.write_text(SCENARIO)
    runs = tmp_path / ("runs" + "".join(flags))
    done = subprocess.run([sys.executable, "-m", "starquake", "run", str(scenario), "--seed",
                           "1", "--runs-dir", str(runs), *flags],
                          capture_output=True, text=True, timeout=400, check=False)
    (run,) = (runs / "background-fencing").iterdir()
    events = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    return done.returncode, json.loads((run / "results.json").read_text()), events


def _nemesis_oks(events: list[dict]) -> list[tuple[str, str]]:
    return [(e["f"], e["value"]) for e in events
            if e["process"] == "nemesis" and e["type"] == "ok"]


def test_a_frozen_owner_beneath_quick_kills_catches_a_missing_fence(tmp_path: Path) -> None:
    code, results, events = _run(tmp_path)
    assert code == 1, results["checkers"]
    assert results["checkers"]["lost"]["count"] > 0
    done = _nemesis_oks(events)
    frozen = next(value for f, value in done if f == "pause")
    during = done[done.index(("pause", frozen)) + 1:done.index(("resume", frozen))]
    assert any(f == "kill" for f, _ in during)  # faults came and went inside it
    assert all(frozen not in value.split(",") for _, value in during)


def test_the_same_schedule_without_the_mutant_is_valid(tmp_path: Path) -> None:
    code, results, _events = _run(tmp_path, "--without-mutants")
    assert code == 0, {k: v for k, v in results["checkers"].items() if v["valid"] is not True}
