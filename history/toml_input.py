"""Reading a TOML input (a scenario, a target file): a file that cannot be read or parsed
is bad input, reported in one line naming the file, by the caller's own error type."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from history.errors import BadInput


def read_toml(path: Path, error: type[BadInput]) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None
