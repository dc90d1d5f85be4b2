"""`python -m impl.lookup --port P --admin-port Q --zk HOSTS[/chroot] [--mutants a,b]`: the
lookup service.

Its store holds only the tenant and cluster records (`impl/lookup/directory.py`); it also
moves tenants between clusters (`impl/lookup/migration.py`). SIGTERM or SIGINT: close and
exit 0.

Security, off unless given, with the brokers' flags: `--metadata-digest-file` (ZooKeeper
digest credentials; the nodes it creates only that user may read or change),
`--token-secret-key` with `--superuser-roles` (clients and admin requests must carry a
token signed with the key; only those roles may change the records),
`--broker-client-token-file` (the token a migration presents to the clusters' admin APIs,
whose superusers must include its role).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from aiohttp import web

from impl.admin.broker_client import broker_client_session
from impl.lookup.admin import build_lookup_app
from impl.lookup.directory import TenantDirectory
from impl.lookup.migration import Migrations
from impl.lookup.server import LookupServer
from impl.metadata.store import MetadataStore, read_digest
from impl.mutants import Mutants
from impl.security.authorization import NoPermissions
from impl.security.config import SecurityConfig, parse_roles
from impl.security.guard import Guard

log = logging.getLogger("impl.lookup")


def security(args: argparse.Namespace) -> SecurityConfig:
    """Tokens checked, and only superusers' changes taken, once a key is given."""
    if args.token_secret_key is None:
        return SecurityConfig(broker_client_token_file=args.broker_client_token_file)
    return SecurityConfig(authentication_enabled=True, authorization_enabled=True,
                          token_secret_key=args.token_secret_key,
                          superuser_roles=args.superuser_roles,
                          broker_client_token_file=args.broker_client_token_file)


async def serve(args: argparse.Namespace) -> int:
    config = security(args)
    guard = Guard(config, NoPermissions())
    session = broker_client_session(config.broker_client_token())
    digest = (None if args.metadata_digest_file is None
              else read_digest(args.metadata_digest_file))
    store = await asyncio.to_thread(MetadataStore.connect, args.zk,
                                    session_timeout=args.session_timeout_ms / 1000,
                                    digest=digest)
    directory = TenantDirectory(store)
    migrations = Migrations(directory, session, Mutants.parse(args.mutants))
    try:
        server = LookupServer(directory, guard)
        await server.start(args.bind_host, args.port)
        admin = web.AppRunner(build_lookup_app(directory, migrations, guard), access_log=None)
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
        await migrations.close()
        await session.close()
        store.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m impl.lookup", description=__doc__)
    parser.add_argument("--port", type=int, required=True, help="binary protocol port")
    parser.add_argument("--admin-port", type=int, required=True, help="HTTP API port")
    parser.add_argument("--zk", required=True, help="ZooKeeper HOST:PORT[,...][/chroot]")
    parser.add_argument("--bind-host", default="127.0.0.1")
    parser.add_argument("--session-timeout-ms", type=int, default=30_000)
    parser.add_argument("--metadata-digest-file", default=None,
                        help="user:password file: authenticate to ZooKeeper, and create "
                             "nodes only that user may read or change")
    parser.add_argument("--token-secret-key", default=None,
                        help="file with the HS256 key tokens are signed with: clients and "
                             "admin requests must then carry a token")
    parser.add_argument("--superuser-roles", type=parse_roles, default=frozenset(),
                        help="comma-separated roles that may change the records (needed "
                             "with --token-secret-key)")
    parser.add_argument("--broker-client-token-file", default=None,
                        help="file with the token a migration presents to the clusters' "
                             "admin APIs")
    parser.add_argument("--mutants", default="",
                        help="comma-separated mutants to switch on (impl/mutants.py)")
    args = parser.parse_args(argv)
    if args.token_secret_key is not None and not args.superuser_roles:
        parser.error("--token-secret-key needs --superuser-roles: nobody could change "
                     "the records")
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    sys.exit(asyncio.run(serve(args)))


if __name__ == "__main__":
    main()
