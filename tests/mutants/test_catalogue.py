"""The mutant switches: a misspelt name must fail loudly, and every mutant must be
documented for the people who switch it on."""

from __future__ import annotations

from pathlib import Path

import pytest

from impl.mutants import CATALOGUE, Mutants, UnknownMutant

DOCS = Path(__file__).resolve().parents[2] / "docs" / "mutants.md"


def test_parse_reads_the_command_line_spelling() -> None:
    mutants = Mutants.parse("no-fencing, skip-terminate,")
    assert mutants.on("no-fencing") and mutants.on("skip-terminate")
    assert not mutants.on("ack-before-durable")


def test_an_unknown_name_is_refused_when_switched_on_and_when_asked() -> None:
    with pytest.raises(UnknownMutant, match="no-fenceing"):
        Mutants.parse("no-fenceing")
    with pytest.raises(UnknownMutant, match=r"known mutants: .*no-fencing"):
        Mutants().on("no-fenceing")


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_every_mutant_is_documented(name: str) -> None:
    assert f"`{name}`" in DOCS.read_text(), f"docs/mutants.md does not describe {name}"
