"""Process control of a served cluster (`starquake serve`) by anyone on this machine,
through files, so a target file's shell hooks can act on it as on a third party's system.

In the control directory each running node has `<node>.pid`, its process id: a hook
kills, pauses or resumes the node with `kill -KILL|-STOP|-CONT $(cat <node>.pid)`. A
killed node cannot be started again by a stranger (only `serve` knows its command line),
so a hook asks for it: it creates `<node>.start`, and `serve`, which looks for requests
twice a second, starts the node, writes its new pid and removes the request; the hook
waits (bounded) for the request to go. The node names are those of our deployments
(`<cluster>-broker1`, `<cluster>-bookie1`), so a target file reads like any other.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Mapping
from pathlib import Path

from harness.targets.local.cluster import Node

log = logging.getLogger(__name__)

START_WAIT_S = 30
"""How long a `start` hook waits for `serve` to take its request."""


class ServedControl:
    """The control directory of one served cluster; `serve_requests` is called by the
    serving loop."""

    def __init__(self, directory: Path, nodes: Mapping[str, Node]) -> None:
        self.directory = directory
        self._nodes = dict(nodes)
        directory.mkdir(parents=True, exist_ok=True)
        for name in self._nodes:
            self._write_pid(name)

    def _write_pid(self, name: str) -> None:
        pid = self._nodes[name].pid
        path = self.directory / f"{name}.pid"
        if pid is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(f"{pid}\n")

    def serve_requests(self) -> None:
        """Start every node whose start was requested (a running one is left alone)."""
        for name, node in self._nodes.items():
            request = self.directory / f"{name}.start"
            if not request.exists():
                continue
            if not node.running:
                log.info("starting %s on request", name)
                node.start()
            self._write_pid(name)
            request.unlink(missing_ok=True)

    def hooks(self) -> dict[str, str]:
        """The shell hooks of a target file for these nodes (placeholder `{node}`)."""
        control = shlex.quote(str(self.directory))
        pid = f"$(cat {control}/{{node}}.pid)"
        request = f"{control}/{{node}}.start"
        start = (f"touch {request}; i=0; while [ -e {request} ] && [ $i -lt "
                 f"{START_WAIT_S * 10} ]; do sleep 0.1; i=$((i+1)); done; [ ! -e {request} ]")
        return {"kill": f"kill -KILL {pid}", "start": start,
                "pause": f"kill -STOP {pid}", "resume": f"kill -CONT {pid}"}
