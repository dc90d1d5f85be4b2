"""The shell steps of the CI recipes in examples/ci/, read without a YAML library: a
GitHub Actions `run:` (one line, or a `|` block), and each item of a GitLab CI
`before_script:`, `script:` or `after_script:` list. The recipes keep to these forms, so
what they run can be run here (tests/ci/test_recipes.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_GITHUB_RUN = re.compile(r"^(?P<indent> *)(- )?run: ?(?P<text>.*)$")
_GITLAB_LIST = re.compile(r"^(?P<indent> *)(?P<key>before_script|script|after_script):\s*$")
_JOB = re.compile(r"^(?P<name>[.\w-]+):\s*$")


@dataclass(frozen=True)
class Step:
    recipe: str
    job: str
    command: str
    """The shell text: one line, or a block's lines joined by newlines."""


def github_steps(path: Path) -> list[Step]:
    lines = path.read_text().splitlines()
    steps, job = [], ""
    for number, line in enumerate(lines):
        job = _job(line, job, indent=2)
        found = _GITHUB_RUN.match(line)
        if not found:
            continue
        text = found["text"]
        if text.strip() == "|":
            block = _indented_after(lines, number, len(found["indent"]))
            text = "\n".join(block)
        steps.append(Step(path.name, job, text))
    return steps


def gitlab_steps(path: Path) -> list[Step]:
    lines = path.read_text().splitlines()
    steps, job = [], ""
    for number, line in enumerate(lines):
        job = _job(line, job, indent=0)
        found = _GITLAB_LIST.match(line)
        if found:
            for item in _indented_after(lines, number, len(found["indent"])):
                steps.append(Step(path.name, job, item.removeprefix("- ")))
    return steps


def _job(line: str, job: str, indent: int) -> str:
    """The job a line belongs to: a key at the jobs' indentation starts one."""
    if line.startswith(" " * indent) and not line.startswith(" " * (indent + 1)):
        found = _JOB.match(line[indent:])
        if found:
            return found["name"]
    return job


def _indented_after(lines: list[str], number: int, indent: int) -> list[str]:
    """The lines after `number` indented deeper than `indent`, dedented."""
    block: list[str] = []
    for line in lines[number + 1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        block.append(line)
    while block and not block[-1].strip():
        block.pop()
    margin = min(len(line) - len(line.lstrip()) for line in block if line.strip())
    return [line[margin:] for line in block]
