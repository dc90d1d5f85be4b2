"""`--budget`'s type: a length of time as a person types it, for the commands that spend
one (`explore`, `shrink`)."""

from __future__ import annotations

import re

import click

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smh]?)")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600}


class Duration(click.ParamType):
    """`90s`, `15m`, `2h`, or a number of seconds."""

    name = "duration"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        found = _DURATION.fullmatch(str(value).strip())
        if found is None:
            self.fail(f"{value!r}: expected a duration such as 90s, 15m or 2h", param, ctx)
        return float(found[1]) * _UNIT_S[found[2]]
