"""A contract group a fault kept from deciding runs again, on a topic and with values of
its own, once the faults leave a calm, while the load lasts; a group that decided does
not; a later round that no longer fits records nothing, as the first attempt is already
recorded."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.workloads.base import WorkloadContext
from harness.workloads.contract import workload as contract_workload
from harness.workloads.contract.clients import Clients, GroupSpec
from harness.workloads.contract.recording import CouldNotRun, Group
from harness.workloads.contract.workload import ContractWorkload
from harness.workloads.settings import WorkloadSettings
from history.writer import HistoryWriter


def _run(tmp_path: Path, specs: tuple[GroupSpec, ...], struck: Callable[[], bool],
         load_s: float) -> tuple[list[dict], list[str]]:
    """The probes' completions and the topics of the attempts, after running `specs`
    with a fault on while `struck()` says so."""
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as history:
        context = WorkloadContext(
            history=history, settings=WorkloadSettings(kind="contract"), seed=1,
            cluster="a", service_url="pulsar://127.0.0.1:1", admin_urls=(), topic="t",
            client_log=tmp_path / "client.log", disturbed_since=lambda _since: struck())
        workload = ContractWorkload(context, groups=specs, beside=())
        workload.run(time.monotonic() + load_s, threading.Event())
    events = [json.loads(line) for line in path.read_text().splitlines()]
    done = [e for e in events if e["f"] == "probe" and e["type"] != "invoke"]
    return done, list(dict.fromkeys(e["topic"] for e in done))


class Fault:
    """A fault on from when `strike` is called until `calm_s` later."""

    def __init__(self, calm_s: float) -> None:
        self.calm_s = calm_s
        self.until = 0.0

    def strike(self) -> None:
        self.until = time.monotonic() + self.calm_s

    def on(self) -> bool:
        return time.monotonic() < self.until


def test_a_struck_group_runs_again_once_calm(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(contract_workload, "ROUND_PAUSE_S", 0.02)
    fault = Fault(calm_s=0.3)
    attempts: list[float] = []

    def differs(_clients: Clients, group: Group) -> None:
        if not attempts:
            fault.strike()
        attempts.append(time.monotonic())
        group.expect("p", group.values(1), ["other"])

    def holds(_clients: Clients, group: Group) -> None:
        group.expect("q", 1, 1)

    done, topics = _run(tmp_path, (GroupSpec("g", ("p",), differs),
                                   GroupSpec("h", ("q",), holds)),
                        struck=fault.on, load_s=60)
    assert [(e["value"], e["type"]) for e in done] == [("p", "info"), ("q", "ok"),
                                                       ("p", "fail")]
    assert attempts[1] >= fault.until  # not while the fault was on
    assert [t.rsplit("-", 1)[-1] for t in topics] == ["g", "h", "try2"]
    assert json.loads(done[-1]["detail"])["expected"] == ["g-try2-0"]


def test_a_group_that_could_not_run_under_a_fault_runs_again(tmp_path: Path,
                                                              monkeypatch) -> None:
    monkeypatch.setattr(contract_workload, "ROUND_PAUSE_S", 0.02)
    fault = Fault(calm_s=0.1)
    attempts: list[str] = []

    def set_up(_clients: Clients, group: Group) -> None:
        attempts.append(group.label)
        if len(attempts) == 1:
            fault.strike()
            raise CouldNotRun("refused while the owner moved")
        group.expect("p", 1, 1)

    done, _ = _run(tmp_path, (GroupSpec("g", ("p",), set_up),), struck=fault.on, load_s=60)
    assert attempts == ["g", "g-try2"]
    assert [(e["value"], e["type"]) for e in done] == [("p", "info"), ("p", "ok")]


def test_no_second_attempt_without_a_fault_or_past_the_load(tmp_path: Path) -> None:
    attempts: list[str] = []

    def refused(_clients: Clients, group: Group) -> None:
        attempts.append(group.label)
        raise CouldNotRun("the target has no such feature")

    (tmp_path / "calm").mkdir()
    _run(tmp_path / "calm", (GroupSpec("g", ("p",), refused),), struck=lambda: False,
         load_s=60)
    assert attempts == ["g"]  # no fault: a refusal stands

    attempts.clear()
    (tmp_path / "short").mkdir()
    done, _ = _run(tmp_path / "short", (GroupSpec("g", ("p",), refused),),
                   struck=lambda: True, load_s=0.5)
    assert attempts == ["g"]  # struck until the load ended
    assert [e["type"] for e in done] == ["info"]
