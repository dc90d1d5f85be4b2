"""Reports as a person sees them: rendered in a real headless Chromium, offline, with the
verdict at the top, a section per anomaly, every plot loaded, links that resolve.

The runs are built and checked once for the module (one Spark job for all of them); the
screenshots are kept under pytest's temporary directory and their paths printed.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from checkers.anomaly import CheckSettings
from checkers.check import check_runs, write_results
from checkers.load import prepare
from checkers.synthetic import INJECTABLE
from reports import timeline
from reports.report import write_report
from reports.suite import write_suite_index
from tests.reports.browser import Browser
from tests.reports.runs import GEO_COMMAND, cut_short_run, every_anomaly_run, geo_run, synthetic_run

pytestmark = pytest.mark.spark

ALL_PLOTS = ("Throughput and failures per cluster", "Latency per operation", "Segment DAG",
             "Consumer assignments over time", "Replication lag",
             "Failovers: duplicates and window against the bound",
             "Availability and recovery around each fault")
SAMPLED_PAGES = 3


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, spark) -> dict[str, Path]:
    top = tmp_path_factory.mktemp("runs")
    made = {"valid": synthetic_run(top / "valid", 600),
            "anomalies": every_anomaly_run(top / "anomalies"),
            "geo": geo_run(top / "geo"), "cut-short": cut_short_run(top / "cut-short")}
    histories = {name: prepare(path / "history.jsonl") for name, path in made.items()}
    for result in check_runs(spark, histories, CheckSettings()):
        write_results(result)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timeline, "MAX_PAGES", SAMPLED_PAGES)
        write_report(made["anomalies"])
    for name in ("valid", "geo", "cut-short"):
        write_report(made[name])
    return made


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    chromium = Browser()
    yield chromium
    chromium.close()


def open_page(browser: Browser, page: Path, shot_name: str) -> None:
    """Load a page and assert what any reader would notice first: it loads cleanly,
    offline, and every image in it has pixels."""
    loaded = browser.load(page)
    assert loaded.errors == [], f"{page}: {loaded.errors}"
    remote = [url for url in loaded.requests if not url.startswith(("file:", "data:"))]
    assert remote == [], f"{page} fetched from the network: {remote}"
    widths = browser.evaluate("[...document.images].map(i => i.complete ? i.naturalWidth : 0)")
    assert all(w > 0 for w in widths), f"{page}: images that did not load: {widths}"
    shot = browser.screenshot(page.parent / f"{shot_name}.png")
    print(f"screenshot: {shot}")


def first_heading(browser: Browser) -> str:
    return browser.evaluate("document.querySelector('main > *').innerText.trim()")


def section_names(browser: Browser) -> list[str]:
    return browser.evaluate("[...document.querySelectorAll('section.anomaly')]"
                            ".map(s => s.dataset.anomaly)")


def plot_titles(browser: Browser) -> list[str]:
    return browser.evaluate("[...document.querySelectorAll('figure h3')].map(h => h.innerText)")


def broken_links(browser: Browser, page: Path) -> list[str]:
    hrefs = browser.evaluate("[...document.querySelectorAll('a[href]')]"
                             ".map(a => a.getAttribute('href'))")
    local = [h.split("#")[0] for h in hrefs if not h.startswith(("#", "http"))]
    return [h for h in local if not (page.parent / h).is_file()]


def test_valid_run_says_valid_at_the_top(runs: dict[str, Path], browser: Browser) -> None:
    open_page(browser, runs["valid"] / "report.html", "valid")
    assert first_heading(browser).startswith("VALID")
    assert section_names(browser) == []
    assert "Throughput and failures per cluster" in plot_titles(browser)
    assert broken_links(browser, runs["valid"] / "report.html") == []


def test_every_anomaly_kind_has_a_section_with_its_proof(runs: dict[str, Path],
                                                         browser: Browser) -> None:
    report = runs["anomalies"] / "report.html"
    open_page(browser, report, "anomalies")
    assert first_heading(browser).startswith("INVALID")
    results = json.loads((runs["anomalies"] / "results.json").read_text())
    assert sorted(section_names(browser)) == sorted(INJECTABLE)
    for name in INJECTABLE:
        heading = browser.evaluate(f"document.querySelector('#anomaly-{name} h3').innerText")
        assert heading == f"{name}: {results['checkers'][name]['count']}"
        proving = browser.evaluate(
            f"[...document.querySelectorAll('#anomaly-{name} tr.proving td:first-child')]"
            ".map(td => Number(td.innerText))")
        first_example = results["checkers"][name]["examples"][0]["events"]
        assert set(first_example) <= set(proving), name
    assert broken_links(browser, report) == []


def test_geo_run_draws_every_plot_and_links_logs(runs: dict[str, Path], browser: Browser) -> None:
    report = runs["geo"] / "report.html"
    open_page(browser, report, "geo")
    assert first_heading(browser).startswith("INVALID")
    assert section_names(browser) == ["duplicate-window"]
    assert plot_titles(browser) == list(ALL_PLOTS)
    assert browser.evaluate("document.querySelector('#omitted')") is None
    assert browser.evaluate("document.querySelector('#command').innerText") == GEO_COMMAND
    facts = browser.evaluate("document.querySelector('table.facts').innerText")
    assert "snapshot-never-taken" in facts and "failover-under-partition" in facts
    logs = browser.evaluate(
        "[...document.querySelectorAll('#logs ~ ul a')].map(a => a.getAttribute('href'))")
    assert logs == ["logs/a-bookie-1.log", "logs/a-broker-1.log", "logs/b-broker-1.log"]
    assert broken_links(browser, report) == []


def test_cut_short_run_is_unknown_and_says_why(runs: dict[str, Path], browser: Browser) -> None:
    open_page(browser, runs["cut-short"] / "report.html", "cut-short")
    assert first_heading(browser).startswith("UNKNOWN")
    assert "cut short" in browser.evaluate("document.querySelector('#truncated').innerText")
    omitted = browser.evaluate("document.querySelector('#omitted').innerText")
    assert "Replication lag: omitted" in omitted and "no nemesis fault" in omitted


def test_timeline_is_sampled_and_says_so(runs: dict[str, Path], browser: Browser) -> None:
    run = runs["anomalies"]
    pages = sorted(run.glob("timeline*.html"))
    assert len(pages) == SAMPLED_PAGES
    open_page(browser, run / "timeline.html", "timeline")
    paging = browser.evaluate("document.querySelector('#paging').innerText")
    assert f"only {SAMPLED_PAGES} of" in paging and "sampled" in paging
    outcomes = browser.evaluate("[...new Set([...document.querySelectorAll('.tl-op')]"
                                ".map(b => b.classList[1]))]")
    assert "op-ok" in outcomes
    rows = browser.evaluate("[...document.querySelectorAll('.tl-name')].map(n => n.innerText)")
    assert [r for r in rows if r.startswith("p")] == ["p0", "p1", "p2", "p3"]
    assert broken_links(browser, run / "timeline.html") == []


def test_suite_index_and_junit(runs: dict[str, Path], browser: Browser, tmp_path: Path) -> None:
    index, junit = write_suite_index(list(runs.values()), tmp_path)
    open_page(browser, index, "suite-index")
    assert first_heading(browser).startswith("2 of 4 runs as expected")
    assert broken_links(browser, index) == []
    cases = {case.get("name").split("/")[-1]: case
             for case in ET.parse(junit).getroot().iter("testcase")}
    assert sorted(cases) == ["anomalies", "cut-short", "geo", "valid"]
    failed = {name for name, case in cases.items() if case.find("failure") is not None}
    assert failed == {"anomalies", "cut-short"}  # geo expects invalid; valid expects valid
    assert "expected valid, got unknown" in cases["cut-short"].find("failure").get("message")
