"""The official client's log lands in the directory of the run going on, even when one
process runs several runs (a suite, `detect`, `explore`): the client's C++ core keeps the
first logger a process gives it, so a file logger per run sent every later run's lines to
the first run's file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_TWO_RUNS = """
import sys
from pathlib import Path
import pulsar
from harness.workloads.client_log import client_logger
for run in sys.argv[1:]:
    # Nothing listens on port 1: the client logs its attempts, then times out.
    client = pulsar.Client("pulsar://127.0.0.1:1", operation_timeout_seconds=1,
                           logger=client_logger(Path(run) / "logs" / "client.log"))
    try:
        client.create_producer("persistent://public/default/t")
    except pulsar.Timeout:
        pass
    client.close()
"""


def test_each_run_of_one_process_has_its_own_client_log(tmp_path: Path) -> None:
    runs = [tmp_path / "run1", tmp_path / "run2"]
    subprocess.run([sys.executable, "-c", _TWO_RUNS, *map(str, runs)], check=True,
                   timeout=60)
    logs = [(run / "logs" / "client.log").read_text() for run in runs]
    for text in logs:
        assert "pulsar://127.0.0.1:1" in text
    first_run_times = {line[:23] for line in logs[0].splitlines()}
    assert not first_run_times & {line[:23] for line in logs[1].splitlines()}
