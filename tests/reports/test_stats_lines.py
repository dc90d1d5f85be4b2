"""The report's sentences on what a check counted but did not call an anomaly (a producer's
resends, pairs an unlink kept from a cluster): present, in the singular or plural, when the
statistic is, and absent when it is zero. Rendered from a hand-written results.json, so no
Spark is needed."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from reports.report import write_report
from tests.reports.runs import synthetic_run


class _ParagraphText(HTMLParser):
    """The text of each `<p>` with an id, by id."""

    def __init__(self) -> None:
        super().__init__()
        self.by_id: dict[str, str] = {}
        self._open: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "p":
            self._open = dict(attrs).get("id")
            if self._open:
                self.by_id[self._open] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "p":
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open:
            self.by_id[self._open] += data


def rendered(run: Path, stats: dict[str, int]) -> dict[str, str]:
    (run / "results.json").write_text(json.dumps({"valid": True, "checkers": {}, "events": 200,
                                                  "stats": stats}))
    parser = _ParagraphText()
    parser.feed(write_report(run).read_text())
    return parser.by_id


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_run(tmp_path_factory.mktemp("stats") / "run", 200)


def test_pairs_an_unlink_kept_from_a_cluster_are_said_not_owed(run: Path) -> None:
    text = rendered(run, {"unreplicated": 3, "producer_retries": 1})
    assert text["unreplicated"].startswith("3 (subscription, value) pairs not owed")
    assert "not counted as lost" in text["unreplicated"]
    assert text["producer-retries"].startswith("1 value stored twice")


def test_one_pair_is_singular_and_none_says_nothing(run: Path) -> None:
    assert rendered(run, {"unreplicated": 1})["unreplicated"].startswith(
        "1 (subscription, value) pair not owed")
    assert {"unreplicated", "producer-retries"}.isdisjoint(
        rendered(run, {"unreplicated": 0, "producer_retries": 0}))
