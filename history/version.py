"""The version of starquake, from the installed package's metadata.

Everything starquake writes for later reading (`results.json`, the HTML report, the JUnit
files) names the version that wrote it, so a CI artefact kept for months still says which
checkers judged it. It sits in `history/` because every layer that writes such a file
reads it.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "starquake"
UNINSTALLED = "unknown"
"""What a file names when the code runs from a checkout that was never installed."""


@cache
def starquake_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return UNINSTALLED
