"""Free loopback ports for the processes the harness starts.

Tests and local clusters never use fixed ports, so that runs can share a machine. A port is
chosen by the harness and bound by the node it starts a moment later; in between, anything
else that binds a port could take it. Outgoing connections are the many such binds (every
client socket takes an ephemeral port), so the ports are drawn at random from below the
kernel's ephemeral range (`net.ipv4.ip_local_port_range`), where no connection is ever
given one: only another server could take a port there first. All the ports a caller needs
are checked in one go, holding every socket until all are chosen, so one request never
gets the same port twice. A port handed out is not bound until its node starts, which may
be after the next request (a cluster draws its ZooKeeper's ports, then its brokers'), so
the process also remembers the last `REMEMBERED` ports it handed out and never draws them
again.
"""

from __future__ import annotations

import random
import socket
import threading
from collections import deque
from contextlib import ExitStack
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10_000
"""Below this, ports are the well-known and registered ones of other services."""
ATTEMPTS = 1000
_DRAW = random.SystemRandom()
"""Not the module's generator: a run seeds that one, and two runs of one seed must not
draw the same ports."""
REMEMBERED = 1000
"""How many of the latest ports handed out are kept from later draws: far more than one
process's clusters hold at once, far fewer than the range offers."""
_handed_out: deque[int] = deque(maxlen=REMEMBERED)
_handing_out = threading.Lock()


def listening_range() -> range | None:
    """The ports below the ephemeral range and above `LOWEST`; None when the kernel does
    not say where that range starts, or leaves no such ports."""
    try:
        start = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return range(LOWEST, start) if start - LOWEST >= 1000 else None


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct ports that were free on `host` a moment ago and not handed out
    lately by this process, below the ephemeral range when there is room (module
    docstring), else ephemeral ones the kernel picks."""
    with _handing_out:
        ports = _draw(count, host)
        _handed_out.extend(ports)
        return ports


def _draw(count: int, host: str) -> list[int]:
    candidates = listening_range()
    recent = set(_handed_out)
    with ExitStack() as stack:
        ports: list[int] = []
        for _ in range(ATTEMPTS):
            if len(ports) == count:
                return ports
            port = _DRAW.choice(candidates) if candidates else 0
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            try:
                sock.bind((host, port))
            except OSError:
                continue  # taken: another draw
            chosen = sock.getsockname()[1]
            if chosen not in ports and chosen not in recent:
                ports.append(chosen)
        if len(ports) == count:
            return ports
    raise OSError(f"no {count} free ports on {host} after {ATTEMPTS} attempts")
