"""Scenario files written into a test's temporary directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from scenarios.format import Scenario, load_scenario

WriteScenario = Callable[[str], Scenario]


@pytest.fixture
def write_scenario(tmp_path: Path) -> WriteScenario:
    """Load TOML text as the scenario file `s.toml`."""

    def write(text: str) -> Scenario:
        path = tmp_path / "s.toml"
        path.write_text(text)
        return load_scenario(path)

    return write
