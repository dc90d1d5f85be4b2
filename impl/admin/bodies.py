"""Reading request bodies: an empty body is an empty object, anything else must be the
JSON shape the endpoint names."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web


async def json_body(request: web.Request, default: Any = None) -> Any:
    text = await request.text()
    if not text.strip():
        return {} if default is None else default
    return json.loads(text)


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
