"""The mutants the reference implementation knows, asked of the implementation itself.

The harness never imports `impl` (it reaches the reference implementation only through
its processes, like any other system under test), so a scenario's `mutants` are checked
against the names `python -m impl.mutants` prints: a misspelt mutant is then an error when
the scenario is loaded, not a broker that refuses to start half-way into a run.
"""

from __future__ import annotations

import functools
import subprocess
import sys


@functools.cache
def reference_mutants() -> frozenset[str]:
    listed = subprocess.run([sys.executable, "-m", "impl.mutants"], capture_output=True,
                            text=True, check=True, timeout=60)
    return frozenset(listed.stdout.split())
