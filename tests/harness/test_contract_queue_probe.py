"""A queue group whose consumers stop short of what was sent: could not run when a fault
struck (a reconnection outlasting the receive loop is no loss, and the group runs again),
and left to `lost` without one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pulsar
import pytest

from harness.workloads.base import WorkloadContext
from harness.workloads.contract.queues import queue_probe
from harness.workloads.contract.recording import CouldNotRun, Group, Member
from harness.workloads.settings import WorkloadSettings
from history.writer import HistoryWriter, SequentialIds


class _Unanswered:
    """Clients whose sends go out and whose consumers then hear nothing: the owner gone."""

    def subscribe(self, _group: Group, consumer: str, _subscription: str,
                  _mode: str) -> Member:
        return Member(process=None, fields={"consumer": consumer},  # type: ignore[arg-type]
                      receive=self._nothing)

    @staticmethod
    def _nothing(_timeout_ms: int) -> pulsar.Message:
        raise pulsar.Timeout("nothing to receive")

    def send(self, _group: Group, _values: list[str], *_args: Any) -> None:
        pass

    def send_batched(self, _group: Group, _values: list[str], **_options: Any) -> None:
        pass


@pytest.mark.parametrize("struck", [True, False])
def test_a_queue_group_read_short_under_a_fault_could_not_run(tmp_path: Path,
                                                              struck: bool) -> None:
    with HistoryWriter(tmp_path / "history.jsonl") as history:
        context = WorkloadContext(
            history=history, settings=WorkloadSettings(kind="contract"), seed=1,
            cluster="a", service_url="pulsar://127.0.0.1:1", admin_urls=(), topic="t",
            client_log=tmp_path / "client.log", disturbed_since=lambda _since: struck)
        group = Group(context, SequentialIds("p"), "t", "queue-failover-batched", ())
        probe = queue_probe("failover", batched=True)
        if struck:
            with pytest.raises(CouldNotRun, match=r"read 0 of \d+ messages while a fault struck"):
                probe(_Unanswered(), group)  # type: ignore[arg-type]
        else:
            probe(_Unanswered(), group)  # type: ignore[arg-type]
    assert not [json.loads(line) for line in (tmp_path / "history.jsonl").read_text()
                .splitlines() if json.loads(line)["f"] == "probe"]  # it has no probe
