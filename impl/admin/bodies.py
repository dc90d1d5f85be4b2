"""Reading request bodies: an empty body is an empty object, anything else must be the
JSON shape the endpoint names.

Bounded as a client may not choose: at most MAX_BODY_BYTES (the application's
`client_max_size`, 413 beyond), read within BODY_READ_S (408 for a client that sends its
headers and then holds the body back), and nested at most MAX_JSON_DEPTH deep (400; the
standard JSON reader would recurse until Python's stack limit and answer 500). No body an
admin path takes nests more than a few levels or comes near a megabyte.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from aiohttp import web

MAX_BODY_BYTES = 1 << 20
BODY_READ_S = 10.0
MAX_JSON_DEPTH = 32
_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


async def json_body(request: web.Request, default: Any = None) -> Any:
    try:
        async with asyncio.timeout(BODY_READ_S):
            text = await request.text()
    except TimeoutError:
        raise web.HTTPRequestTimeout(
            reason=f"request body not received within {BODY_READ_S:g} s") from None
    if not text.strip():
        return {} if default is None else default
    _check_depth(text)
    return json.loads(text)


def _check_depth(text: str) -> None:
    """Raise ValueError (400) for JSON nested deeper than MAX_JSON_DEPTH, before parsing:
    brackets inside strings do not count."""
    depth = 0
    for token in _STRING_OR_BRACKET.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise ValueError(f"request body nests deeper than {MAX_JSON_DEPTH} levels")
        elif bracket in "]}":
            depth -= 1


async def json_object(request: web.Request) -> dict[str, Any]:
    value = await json_body(request)
    if not isinstance(value, dict):
        raise ValueError("request body must be a JSON object")
    return value


async def json_string_list(request: web.Request) -> list[str]:
    value = await json_body(request, default=[])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("request body must be a JSON list of names")
    return value


async def json_boolean(request: web.Request) -> bool:
    value = await json_body(request)
    if not isinstance(value, bool):
        raise ValueError("request body must be true or false")
    return value
