"""`python -m impl.bookie --port P --data-dir D --zk HOSTS[/chroot] [--mutants a,b]`.

Recovers its ledgers from the journal, listens, then registers itself in ZooKeeper. SIGTERM
or SIGINT: unregister (by closing the session), make the journal durable, exit 0. A failed
fsync exits 1.
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

log = logging.getLogger("impl.bookie")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m impl.bookie", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--zk", required=True, help="ZooKeeper HOST:PORT[,...][/chroot]")
    parser.add_argument("--advertised-host", default="127.0.0.1")
    parser.add_argument("--bind-host", default=None,
                        help="address to listen on (default: the advertised host)")
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--mutants", default="")
    parser.add_argument("--metadata-digest-file", default=None,
                        help="user:password file for ZooKeeper digest authentication")
    return parser.parse_args(argv)


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
    server = BookieServer(ledgers, BookieConfig(args.bind_host or args.advertised_host,
                                                args.port), mutants)
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
    return asyncio.run(_serve(_arguments(argv)))


if __name__ == "__main__":
    sys.exit(main())
