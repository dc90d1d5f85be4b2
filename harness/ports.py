"""Free loopback ports for the processes the harness starts.

Tests and local clusters never use fixed ports, so that runs can share a machine. All the
ports a caller needs are taken in one go, holding every socket until all are chosen, so the
kernel cannot hand out the same port twice within a request.
"""

from __future__ import annotations

import socket
from contextlib import ExitStack


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct ports that were free on `host` a moment ago.

    The port is released before the caller's process binds it, so another process could
    take it in between; the kernel hands out ephemeral ports in rotation, which makes that
    rare on a test machine.
    """
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            ports.append(sock.getsockname()[1])
        return ports
