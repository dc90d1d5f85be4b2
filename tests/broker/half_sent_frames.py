"""Run as a process of its own (`python -m tests.broker.half_sent_frames`), so that its
resident memory is the broker's alone: a broker whose allocator is set as the broker
process sets it, 40 connections that each send half of a 5 MiB frame, then close. Prints
the resident MiB before, while the frames are held, and after the close, as JSON."""

from __future__ import annotations

import json
import socket
import struct
import time
from urllib.parse import urlsplit

from impl.broker.allocator import return_large_buffers_when_freed
from tests.broker.conftest import serving

CONNECTIONS = 40
FRAME_BYTES = 5 * 1024 * 1024


def resident_mib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status
                    if line.startswith("VmRSS:")) // 1024


def main() -> None:
    return_large_buffers_when_freed()
    with serving() as broker:
        address = urlsplit(broker.url)
        time.sleep(0.5)
        before = resident_mib()
        sockets = []
        for _ in range(CONNECTIONS):
            sock = socket.create_connection((address.hostname, address.port))
            sock.sendall(struct.pack(">I", FRAME_BYTES) + bytes(FRAME_BYTES // 2))
            sockets.append(sock)
        time.sleep(2)  # the broker reads what was sent
        held = resident_mib()
        for sock in sockets:
            sock.close()
        time.sleep(2)  # and notices the closes
        print(json.dumps({"before": before, "held": held, "after": resident_mib()}))


if __name__ == "__main__":
    main()
