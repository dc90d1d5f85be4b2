"""The official client's log, in the `logs/client.log` of the run that is going on.

The client's C++ core takes a logger once per process and keeps it for every later client
of that process. A `pulsar.FileLogger` handed to each run's client therefore wrote every
run's client log into the first run's directory whenever one process ran several runs (a
suite, `detect`, `explore`), and left the later runs' `client.log` empty. Every client is
handed this one Python logger instead, and each run points it at its own file: the core
keeps calling the same logger, whose file is the current run's.
"""

from __future__ import annotations

import logging
from pathlib import Path

_CLIENT = logging.getLogger("starquake.pulsar-client")
_CLIENT.propagate = False  # the client's lines belong in the run's file, not the console


def client_logger(path: Path) -> logging.Logger:
    """The logger to give every official client of the run whose client log is `path`,
    from now on writing there (and no longer to an earlier run's file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for earlier in list(_CLIENT.handlers):
        _CLIENT.removeHandler(earlier)
        earlier.close()
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    _CLIENT.addHandler(handler)
    _CLIENT.setLevel(logging.INFO)
    return _CLIENT
