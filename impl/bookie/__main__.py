"""`python -m impl.bookie --port P --data-dir D --zk HOSTS[/chroot] [--mutants a,b]
[--token-secret-key FILE --client-roles ROLES]`.

Recovers its ledgers from the journal, listens, then registers itself in ZooKeeper. SIGTERM
or SIGINT: unregister (by closing the session), make the journal durable, exit 0. A failed
fsync exits 1. With a token key, only the brokers' roles may use it (impl/bookie/server.py).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from impl.bookie.ledgers import LedgerStore
from impl.bookie.registration import BookieRegistration
from impl.bookie.server import BookieConfig, BookieServer
from impl.metadata.store import MetadataStore, read_digest
from impl.mutants import Mutants
from wire.tokens import read_secret_key

log = logging.getLogger("impl.bookie")


def parse_bookie_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m impl.bookie", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--zk", required=True, help="ZooKeeper HOST:PORT[,...][/chroot]")
    parser.add_argument("--advertised-host", default="127.0.0.1")
    parser.add_argument("--bind-host", default=None,
                        help="address to listen on (default: the advertised host)")
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--mutants", default="")
    parser.add_argument("--token-secret-key", default=None,
                        help="file with the HS256 key: only clients presenting a token "
                             "signed with it, of one of --client-roles, may use the bookie")
    parser.add_argument("--client-roles", default="",
                        help="comma-separated roles (the brokers') whose tokens are taken")
    parser.add_argument("--metadata-digest-file", default=None,
                        help="user:password file for ZooKeeper digest authentication")
    args = parser.parse_args(argv)
    args.token_secret = None
    if args.token_secret_key is not None:
        if not args.client_roles:
            parser.error("--token-secret-key needs --client-roles: whose tokens to take")
        try:
            args.token_secret = read_secret_key(args.token_secret_key)
        except (OSError, ValueError) as exc:
            parser.error(f"--token-secret-key {args.token_secret_key}: {exc}")
    return args


def bookie_config(args: argparse.Namespace) -> BookieConfig:
    return BookieConfig(args.bind_host or args.advertised_host, args.port,
                        token_secret=args.token_secret,
                        client_roles=frozenset(role.strip() for role in args.client_roles.split(",")
                                               if role.strip()))


async def _serve(args: argparse.Namespace) -> int:
    mutants = Mutants.parse(args.mutants)
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    exit_code = 0

    def fatal(exc: BaseException) -> None:
        nonlocal exit_code
        log.critical("journal write failed, stopping: %r", exc)
        exit_code = 1
        stopping.set()

    ledgers = LedgerStore(args.data_dir, fatal)
    log.info("recovered %d ledgers from %s", len(ledgers.ledgers), ledgers.journal.path)
    server = BookieServer(ledgers, bookie_config(args), mutants)
    await server.start()
    session_timeout = args.session_timeout_ms / 1000
    digest = (None if args.metadata_digest_file is None
              else read_digest(args.metadata_digest_file))
    store = await loop.run_in_executor(None, lambda: MetadataStore.connect(
        args.zk, session_timeout=session_timeout, digest=digest))
    registration = BookieRegistration(store, f"{args.advertised_host}:{args.port}",
                                      stale_wait=2 * session_timeout)
    registration.register_in_background()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    await stopping.wait()
    registration.stop()
    await loop.run_in_executor(None, store.close)
    await server.stop()
    return exit_code


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return asyncio.run(_serve(parse_bookie_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
