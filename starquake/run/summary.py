"""The few lines a run ends with: verdict, anomalies, counts, where everything is."""

from __future__ import annotations

from rich.console import Console

from starquake.run.pipeline import RunOutcome

VERDICTS: dict[object, str] = {True: "[green]valid[/green]", False: "[red]INVALID[/red]"}


def print_summary(console: Console, outcome: RunOutcome) -> None:
    results = outcome.results
    stats = results.get("stats", {})
    anomalies = {name: c["count"] for name, c in results.get("checkers", {}).items()
                 if c.get("count")}
    undecided = [name for name, c in results.get("checkers", {}).items()
                 if c.get("valid") == "unknown"]
    verdict = VERDICTS.get(results.get("valid"), "[yellow]unknown[/yellow]")
    console.print(f"verdict: {verdict}   scenario {results.get('scenario')} seed "
                  f"{results.get('seed')}   {results.get('events')} events")
    console.print(f"  sends ok/fail/info {stats.get('sends_ok', 0)}/{stats.get('sends_fail', 0)}"
                  f"/{stats.get('sends_info', 0)}   recvs {stats.get('recvs', 0)}   "
                  f"faults {len(stats.get('nemesis', []))}")
    if anomalies:
        console.print("  anomalies: " + ", ".join(f"{k}={v}" for k, v in anomalies.items()))
    if undecided:
        console.print("  undecided: " + ", ".join(undecided))
    console.print(f"  run directory: {outcome.run_dir}", markup=False)
    if outcome.report is not None:
        console.print(f"  report: {outcome.report}", markup=False)
