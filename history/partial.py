"""Files that appear whole or not at all: written under a hidden temporary name beside
their final one, then renamed.

A process killed outright (SIGKILL, SIGTERM's default action, a lost machine) cannot remove
its temporary file, so the next writer of the same file removes the ones whose writer is
gone. Without that, every killed check would leave a hidden file of up to the history's
size in the run directory.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def temporary_beside(final: Path) -> Path:
    """This process's temporary name for `final`, after removing those of dead writers."""
    for leftover in final.parent.glob(f".{final.name}.*.tmp"):
        pid = leftover.name[len(final.name) + 2:-len(".tmp")]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)
    return final.with_name(f".{final.name}.{os.getpid()}.tmp")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
