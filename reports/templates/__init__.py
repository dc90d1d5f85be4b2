"""Jinja templates of the report pages, shipped as package data; one stylesheet inlined
into every page, so pages need nothing from the network, and one footer naming the
starquake that wrote the page (`footer.html.jinja`)."""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from history.version import starquake_version


@cache
def _environment() -> Environment:
    environment = Environment(loader=PackageLoader("reports", "templates"),
                              autoescape=select_autoescape(["jinja"]),
                              undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    environment.globals["starquake_version"] = starquake_version()
    return environment


def render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)
