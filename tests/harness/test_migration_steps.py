"""The migration workload records the lookup service's migration as the service ran it:
each step once, in the service's order (the mutant's order too), done or failed."""

from __future__ import annotations

from harness.workloads.migration import step_changes


def _report(*steps: tuple[str, str]) -> list[dict[str, str]]:
    return [{"step": name, "state": state, "message": "why" if state == "failed" else ""}
            for name, state in steps]


def test_each_step_is_invoked_once_and_completed_once_across_reports() -> None:
    seen: dict[str, str] = {}
    first = step_changes(_report(("metadata", "done"), ("data", "running")), seen)
    again = step_changes(_report(("metadata", "done"), ("data", "running")), seen)
    later = step_changes(_report(("metadata", "done"), ("data", "done"),
                                 ("switch", "running")), seen)
    assert first == [("invoke", "metadata", ""), ("ok", "metadata", ""),
                     ("invoke", "data", "")]
    assert again == []
    assert later == [("ok", "data", ""), ("invoke", "switch", "")]


def test_the_order_is_the_services_even_when_it_is_the_wrong_one() -> None:
    changes = step_changes(_report(("metadata", "done"), ("data", "done"), ("switch", "done"),
                                   ("consumption progress", "running")), {})
    assert [name for kind, name, _ in changes if kind == "invoke"] == [
        "metadata", "data", "switch", "consumption progress"]


def test_a_failed_step_completes_info_with_the_services_message() -> None:
    seen = {"metadata": "done", "data": "running"}
    assert step_changes(_report(("metadata", "done"), ("data", "failed")), seen) == [
        ("info", "data", "why")]
    assert step_changes(_report(("metadata", "done"), ("data", "failed")), seen) == []
