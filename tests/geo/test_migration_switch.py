"""The switch of a tenant migration (step 4) on a real ZooKeeper, against a source cluster
whose admin API is played by the test: no client reaches either cluster until the source
has replicated its last writes, and a source that never does gets its clients back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import aiohttp
import pytest
from aiohttp import web

from impl.lookup.directory import TenantDirectory, TenantMoving
from impl.lookup.migration import Migration, MigrationStuck

pytestmark = pytest.mark.zk

_TOPIC = "persistent://t/ns/x"


class _Source:
    """A source cluster's admin API: one namespace, one bundle, one topic, whose replication
    backlog to `b` empties after `polls_to_drain` stats requests once the bundle is
    unloaded (`None`: never)."""

    def __init__(self, polls_to_drain: int | None) -> None:
        self.polls_left = polls_to_drain
        self.unloaded = False
        self.routes_seen: list[str] = []
        """What the lookup service answered for the tenant at each stats request."""
        self.route: Callable[[], str] = lambda: ""

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/admin/v2/namespaces/t", lambda _: web.json_response(["t/ns"]))
        app.router.add_get("/admin/v2/namespaces/t/ns/bundles", lambda _: web.json_response(
            {"boundaries": ["0x00000000", "0xffffffff"]}))
        app.router.add_put("/admin/v2/namespaces/t/ns/0x00000000_0xffffffff/unload",
                           self._unload)
        app.router.add_get("/admin/v2/namespaces/t/ns/topics",
                           lambda _: web.json_response([_TOPIC]))
        app.router.add_get("/admin/v2/persistent/t/ns/x/stats", self._stats)
        return app

    async def _unload(self, _: web.Request) -> web.Response:
        self.unloaded = True
        return web.Response(status=204)

    async def _stats(self, _: web.Request) -> web.Response:
        self.routes_seen.append(await asyncio.to_thread(self.route))
        backlog = 1
        if self.unloaded and self.polls_left is not None:
            backlog = int(self.polls_left > 0)
            self.polls_left -= 1
        return web.json_response({"replication": {"b": {"msgBacklog": backlog}}})


def _switch(directory: TenantDirectory, source: _Source, timeout_s: float) -> None:
    """Run the switch of tenant `t` from `a` (played by `source`) to `b`."""
    def route() -> str:
        try:
            return directory.route("t")
        except TenantMoving:
            return "held"

    source.route = route

    async def switch() -> None:
        runner = web.AppRunner(source.app())
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        directory.set_cluster("a", "pulsar://a:6650", f"http://127.0.0.1:{port}")
        directory.set_cluster("b", "pulsar://b:6650", "http://127.0.0.1:1")
        directory.assign("t", "a")
        try:
            async with aiohttp.ClientSession() as session:
                migration = Migration("t", directory.cluster("a"), directory.cluster("b"),
                                      directory, session, timeout_s)
                await migration._switch()
        finally:
            await runner.cleanup()

    asyncio.run(asyncio.wait_for(switch(), 30))


def test_clients_wait_until_the_source_has_replicated_its_last_writes(zk_store) -> None:
    directory, source = TenantDirectory(zk_store()), _Source(polls_to_drain=3)
    _switch(directory, source, timeout_s=20)
    assert source.unloaded
    # Held from before the first look at the backlog until it was empty, then in b.
    assert source.routes_seen == ["held"] * 4
    assert directory.route("t") == "pulsar://b:6650"


def test_a_source_that_never_hands_over_gets_its_clients_back(zk_store) -> None:
    directory, source = TenantDirectory(zk_store()), _Source(polls_to_drain=None)
    with pytest.raises(MigrationStuck, match="replication backlog to b"):
        _switch(directory, source, timeout_s=1)
    assert set(source.routes_seen) == {"held"}
    assert directory.route("t") == "pulsar://a:6650"
