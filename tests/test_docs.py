"""The README and the docs stay true at least in their links: every relative link names
a file of the repository (a page renamed or never written shows here, not to a reader)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_relative_link_names_a_file() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    missing = [f"{page.relative_to(REPO)}: {target}"
               for page in pages for target in LINK.findall(page.read_text())
               if not re.match(r"[a-z]+:|#", target)
               and not (page.parent / target.split("#")[0]).exists()]
    assert missing == []
