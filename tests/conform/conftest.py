"""What the tests of a served target share: our reference implementation started on its
own (`starquake serve`, local processes) once per module, as a third party's system."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conform.helpers import serve


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The served cluster's target file, its hooks signalling the served processes."""
    yield from serve(tmp_path_factory.mktemp("serve"))
