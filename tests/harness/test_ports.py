"""Ports for the nodes the harness starts: free, distinct, and outside the range the kernel
gives outgoing connections, so no client socket can take one before its node binds it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harness import ports
from harness.ports import free_ports, listening_range


def test_ports_are_free_distinct_and_below_the_ephemeral_range() -> None:
    below = listening_range()
    assert below is not None, "this machine's kernel says where its ephemeral range starts"
    chosen = free_ports(20)
    assert len(set(chosen)) == 20 and all(port in below for port in chosen)
    for port in chosen:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))


def test_a_taken_port_is_never_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        monkeypatch.setattr(ports, "listening_range", lambda: range(port, port + 1))
        with pytest.raises(OSError, match=r"no 1 free ports on 127\.0\.0\.1 after 1000 attempts"):
            free_ports(1)


def test_without_the_kernels_range_the_kernel_picks(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE", tmp_path / "absent")
    assert listening_range() is None
    assert len(set(free_ports(3))) == 3


def test_a_port_handed_out_is_not_drawn_again_before_its_node_binds_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster draws its ZooKeeper's ports and then its brokers', and binds none of them
    until it starts: the second draw must not repeat the first."""
    probes = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(2)]
    for probe in probes:
        probe.bind(("127.0.0.1", 0))
    pair = [probe.getsockname()[1] for probe in probes]
    for probe in probes:
        probe.close()
    monkeypatch.setattr(ports, "listening_range", lambda: pair)
    first, second = free_ports(1), free_ports(1)
    assert sorted(first + second) == sorted(pair)
    with pytest.raises(OSError, match="no 1 free ports"):
        free_ports(1)
