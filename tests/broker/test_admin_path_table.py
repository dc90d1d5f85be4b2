"""docs/protocol.md's table of served admin paths is the admin application's route table:
every route is in it with its method, and it names no route the application lacks."""

from __future__ import annotations

import re
from pathlib import Path

from tests.cluster.helpers import admin_routes

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
TOPIC_PREFIX = "/admin/v2/persistent/{}/{}"
"""What the table's `...` stands for."""
WILDCARD = "/..."
"""A row for every path below a prefix (PIP-468's own tables are in scalable-topics.md)."""


def _canonical(path: str) -> str:
    """A path with its optional query dropped and every parameter written `{}`."""
    path = re.sub(r"\[.*?\]$", "", path)
    path = TOPIC_PREFIX + path[3:] if path.startswith("...") else path
    return re.sub(r"\{[^}]*\}", "{}", path)


def documented() -> tuple[set[tuple[str, str]], set[str]]:
    """(method, path) pairs of the Served table, and the prefixes its wildcard rows give."""
    text = DOC.read_text()
    served = text[text.index("### Served"):text.index("### Refused")]
    pairs, prefixes = set(), set()
    for line in served.splitlines():
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip("|"))]
        if len(cells) < 2 or not cells[1].startswith("`"):
            continue
        for path in re.findall(r"`([^`]+)`", cells[1]):
            if path.endswith(WILDCARD):
                prefixes.add(path.removesuffix(WILDCARD))
                continue
            pairs |= {(method.strip(), _canonical(path)) for method in cells[0].split(",")}
    return pairs, prefixes


def routes() -> set[tuple[str, str]]:
    return {(method, _canonical(path)) for method, path in admin_routes()}


def test_every_route_is_documented_and_nothing_else() -> None:
    pairs, prefixes = documented()
    served = {(method, path) for method, path in routes()
              if not any(path.startswith(prefix) for prefix in prefixes)}
    assert sorted(served - pairs) == [], "served but not in the table"
    assert sorted(pairs - served) == [], "in the table but not served"
