"""The workload registry: a workload is one class and one line, and the scenario reader
takes its knobs from the class's declaration alone."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.workloads.base import WorkloadContext
from harness.workloads.knobs import Knobs, declared, knob
from harness.workloads.registry import WORKLOADS, WorkloadKind, make_workload
from harness.workloads.settings import WorkloadSettings
from history.writer import HistoryWriter
from scenarios.format import ScenarioError, load_scenario


class _Echo:
    """A workload of this test only, with one knob."""

    @dataclass(frozen=True)
    class Knobs(Knobs):
        echoes: int = knob(3, "How many times each message is sent.", least=1, most=9)

    def __init__(self, context: WorkloadContext) -> None:
        self.context = context
        self.echoes = context.settings.knobs_as(_Echo.Knobs).echoes


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(WORKLOADS, "echo", WorkloadKind("echo", _Echo, _Echo.Knobs, "one"))


def _load(tmp_path: Path, text: str) -> WorkloadSettings:
    path = tmp_path / "s.toml"
    path.write_text(text)
    return load_scenario(path).workload


def test_a_registered_workload_gets_its_knob_from_the_scenario(echo: None,
                                                              tmp_path: Path) -> None:
    settings = _load(tmp_path, '[workload]\nkind = "echo"\nechoes = 5\n')
    assert settings.knobs == _Echo.Knobs(echoes=5)
    context = WorkloadContext(history=HistoryWriter(tmp_path / "history.jsonl"),
                              settings=settings, seed=1, cluster="a", service_url="",
                              admin_urls=(), topic="t", client_log=tmp_path / "client.log")
    workload = make_workload(context)
    assert isinstance(workload, _Echo) and workload.echoes == 5
    assert _load(tmp_path, '[workload]\nkind = "echo"\n').knobs == _Echo.Knobs(echoes=3)


@pytest.mark.parametrize(("text", "message"), [
    ('kind = "echo"\nechoes = 0\n', "workload.echoes: expected a number of at least 1, got 0"),
    ('kind = "echo"\nechoes = 10\n', "workload.echoes: expected a number from 1 to 9, got 10"),
    ('kind = "echo"\nechoes = "many"\n', "workload.echoes: expected an integer, got 'many'"),
    ('kind = "echo"\nprocess_ms = 5\n',
     "workload.process_ms: only the scalable and topic workloads take it, not the echo"),
    ('kind = "topic"\nechoes = 4\n',
     "workload.echoes: only the echo workload takes it, not the topic workload"),
])
def test_a_registered_workload_s_knob_is_checked_on_load(echo: None, tmp_path: Path,
                                                          text: str, message: str) -> None:
    with pytest.raises(ScenarioError) as error:
        _load(tmp_path, "[workload]\n" + text)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_an_unknown_knob_is_named_with_the_known_ones(echo: None, tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"workload\.echos: unknown key; expected one of "
                                            r"[a-z_, ]*, echoes, [a-z_, ]*, kind, "):
        _load(tmp_path, '[workload]\nkind = "echo"\nechos = 4\n')


def test_another_workload_s_knob_at_its_default_passes(echo: None, tmp_path: Path) -> None:
    """As a file that writes every knob out does."""
    assert _load(tmp_path, '[workload]\nkind = "topic"\nechoes = 3\n').kind == "topic"


def test_each_entry_holds_its_class_s_knobs() -> None:
    for name, kind in WORKLOADS.items():
        assert kind.name == name
        assert kind.knobs is kind.workload.Knobs, name


def test_a_knob_several_workloads_read_is_declared_once() -> None:
    """Shared knobs come from one base class, so the scenario reader, the docs and every
    workload agree on its type, default and range."""
    common = {spec.name for spec in declared(WorkloadSettings)}
    seen: dict[str, object] = {}
    for kind in WORKLOADS.values():
        for spec in declared(kind.knobs):
            assert spec.name not in common | {"kind"}, spec.name
            assert seen.setdefault(spec.name, spec) == spec, spec.name


def test_declared_knobs_refuse_a_type_the_reader_cannot_check() -> None:
    @dataclass(frozen=True)
    class Odd(Knobs):
        ratio: complex = knob(1j, "Not a TOML value.")

    with pytest.raises(TypeError, match=r"Odd\.ratio"):
        declared(Odd)
