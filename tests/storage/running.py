"""Helpers shared by the storage tests."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run one test's asyncio body with a bound, so a hang fails instead of stalling."""
    return asyncio.run(asyncio.wait_for(coroutine, 60))
