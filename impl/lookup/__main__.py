"""`python -m impl.lookup --port P --admin-port Q --zk HOSTS[/chroot]`: the lookup service.

Its store holds only the tenant and cluster records (`impl/lookup/directory.py`). SIGTERM
or SIGINT: close and exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from aiohttp import web

from impl.lookup.admin import build_lookup_app
from impl.lookup.directory import TenantDirectory
from impl.lookup.server import LookupServer
from impl.metadata.store import MetadataStore

log = logging.getLogger("impl.lookup")


async def serve(args: argparse.Namespace) -> int:
    store = await asyncio.to_thread(MetadataStore.connect, args.zk,
                                    session_timeout=args.session_timeout_ms / 1000)
    try:
        directory = TenantDirectory(store)
        server = LookupServer(directory)
        await server.start(args.bind_host, args.port)
        admin = web.AppRunner(build_lookup_app(directory), access_log=None)
        await admin.setup()
        await web.TCPSite(admin, args.bind_host, args.admin_port).start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        log.info("lookup service on port %d, admin port %d", args.port, args.admin_port)
        await stop.wait()
        await server.close()
        await admin.cleanup()
        return 0
    finally:
        store.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m impl.lookup", description=__doc__)
    parser.add_argument("--port", type=int, required=True, help="binary protocol port")
    parser.add_argument("--admin-port", type=int, required=True, help="HTTP API port")
    parser.add_argument("--zk", required=True, help="ZooKeeper HOST:PORT[,...][/chroot]")
    parser.add_argument("--bind-host", default="127.0.0.1")
    parser.add_argument("--session-timeout-ms", type=int, default=30_000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    sys.exit(asyncio.run(serve(args)))


if __name__ == "__main__":
    main()
