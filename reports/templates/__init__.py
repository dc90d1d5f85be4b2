"""Jinja templates of the report pages, shipped as package data; one stylesheet inlined
into every page, so pages need nothing from the network."""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape


@cache
def _environment() -> Environment:
    return Environment(loader=PackageLoader("reports", "templates"),
                       autoescape=select_autoescape(["jinja"]), undefined=StrictUndefined,
                       trim_blocks=True, lstrip_blocks=True)


def render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)
