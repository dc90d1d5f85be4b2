"""The admin API's bounds against careless or hostile requests: a body above 1 MiB is
answered 413, one not sent within the read time 408, JSON nested too deep 400 (it was a
500 with a traceback), and only the health check and `/metrics` themselves are open: a
path that merely starts like the health check needs a token."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from impl.admin import bodies
from impl.admin.app import build_admin_app
from impl.admin.context import AdminContext
from impl.security.config import SecurityConfig
from impl.security.guard import OPEN_GUARD, Guard
from tests.security.conftest import MemoryPermissions

TENANT = "/admin/v2/tenants/bounded"


@asynccontextmanager
async def admin(guard: Guard = OPEN_GUARD) -> AsyncIterator[TestClient[Any, Any]]:
    """The admin application over a context with no broker behind it: what is tested here
    is answered before any handler reaches one."""
    context = AdminContext("test", None, None, None, lambda: None)  # type: ignore[arg-type]
    async with TestClient(TestServer(build_admin_app(context, guard))) as client:
        yield client


def answer(work: Callable[[TestClient[Any, Any]], Awaitable[tuple[int, str]]],
           guard: Guard = OPEN_GUARD) -> tuple[int, str]:
    async def run() -> tuple[int, str]:
        async with admin(guard) as client:
            return await work(client)
    return asyncio.run(run())


def _put(body: bytes) -> Callable[[TestClient[Any, Any]], Awaitable[tuple[int, str]]]:
    async def put(client: TestClient[Any, Any]) -> tuple[int, str]:
        response = await client.put(TENANT, data=body)
        return response.status, (await response.json())["reason"]
    return put


def test_a_body_above_the_limit_is_413() -> None:
    body = b'{"adminRoles": ["' + b"a" * bodies.MAX_BODY_BYTES + b'"]}'
    assert answer(_put(body))[0] == 413


DEEP = 100_000


@pytest.mark.parametrize("body", [b"[" * DEEP + b"]" * DEEP,
                                  b'{"a":' * DEEP + b"1" + b"}" * DEEP],
                         ids=["arrays", "objects"])
def test_json_nested_too_deep_is_400_not_500(body: bytes) -> None:
    status, reason = answer(_put(body))
    assert (status, reason) == (400, f"request body nests deeper than "
                                     f"{bodies.MAX_JSON_DEPTH} levels")


def test_brackets_inside_strings_do_not_count() -> None:
    """A shallow body whose strings hold brackets goes past the depth check (and on to the
    handler, which has no metadata store here)."""
    body = b'{"adminRoles": ["' + b"[" * 100 + b'"]}'
    assert answer(_put(body))[0] != 400


def test_a_body_held_back_is_408(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bodies, "BODY_READ_S", 0.5)

    async def held_back(client: TestClient[Any, Any]) -> tuple[int, str]:
        reader, writer = await asyncio.open_connection(client.host, client.port)
        writer.write(f"PUT {TENANT} HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n"
                     f"\r\n{{".encode())
        await writer.drain()
        started = time.monotonic()
        try:
            status_line = await asyncio.wait_for(reader.readline(), 5)
        finally:
            writer.close()
        assert time.monotonic() - started < 3
        return int(status_line.split()[1]), status_line.decode()

    assert answer(held_back)[0] == 408


@pytest.fixture(scope="module")
def authenticating(secret_key_file: Path) -> Guard:
    return Guard(SecurityConfig(authentication_enabled=True,
                                token_secret_key=str(secret_key_file)), MemoryPermissions())


def _get(path: str) -> Callable[[TestClient[Any, Any]], Awaitable[tuple[int, str]]]:
    async def get(client: TestClient[Any, Any]) -> tuple[int, str]:
        response = await client.get(path)
        return response.status, await response.text()
    return get


@pytest.mark.parametrize("path", ["/admin/v2/brokers/health/127.0.0.1:1/ownedNamespaces",
                                  "/admin/v2/brokers/healthy", "/metricsx"])
def test_a_path_that_only_starts_like_an_open_one_needs_a_token(
        authenticating: Guard, path: str) -> None:
    assert answer(_get(path), authenticating)[0] == 401


def test_the_health_check_stays_open(authenticating: Guard) -> None:
    assert answer(_get("/admin/v2/brokers/health"), authenticating)[0] == 200
