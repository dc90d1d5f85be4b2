"""The prepared files where a cluster's workers can read them.

Spark's executors and their Python workers open the paired files by the path the driver
gives them, so on a cluster those files must be at that path on every worker: a shared
directory (an NFS or bind mount at the same path everywhere). A run directory outside it
is copied in for the check and the copy removed afterwards, so the run directory stays
the one place a run's files live.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from checkers.load import PreparedHistory


@contextmanager
def staged(histories: dict[str, PreparedHistory], shared_dir: Path | None
           ) -> Iterator[dict[str, PreparedHistory]]:
    """The histories with their paired files under `shared_dir` (copied there unless they
    already are) for the duration of the block; unchanged without a shared directory."""
    if shared_dir is None:
        yield histories
        return
    shared = shared_dir.resolve()
    outside = {run: h for run, h in histories.items() if shared not in h.paired.resolve().parents}
    if not outside:
        yield histories
        return
    stage = Path(tempfile.mkdtemp(prefix=".starquake-check-", dir=shared))
    try:
        os.chmod(stage, 0o755)  # workers may run as another user than the driver
        copies = dict(histories)
        for number, (run, history) in enumerate(outside.items()):
            paired = stage / str(number) / history.paired.name
            shutil.copytree(history.paired, paired)
            copies[run] = dataclasses.replace(history, paired=paired)
        yield copies
    finally:
        shutil.rmtree(stage, ignore_errors=True)
