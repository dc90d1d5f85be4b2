"""Node and network control by the shell commands of a target file's `[hooks]`.

A hook is a template (harness/targets/external/file.py says which placeholders it may use);
each call renders it for one node, runs it with `sh -c` in the target file's directory and
waits at most `hook_timeout_s`. A hook that exits non-zero or overruns raises `HookFailed`
(exit 4: the system, not our input, misbehaved) naming the node, the hook and the end of
its output, since that output is all a user has to see why.

A command runs in a session of its own, so an overrun kills the whole process group it
started (a `sleep` in a pipeline included) and the wait stays bounded.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path

from harness.targets.external.file import NodeEntry, TargetFile, template_fields
from history.errors import BadInput, EnvironmentProblem

OUTPUT_TAIL_LINES = 10


class HookFailed(EnvironmentProblem):
    """A hook exited non-zero or did not finish in time."""


class PortDropUnsupported(BadInput):
    """A drop of one port was asked of a node whose partition hook has no `{port}`."""


def _tail(output: str) -> str:
    return "\n".join(output.strip().splitlines()[-OUTPUT_TAIL_LINES:]) or "(no output)"


def run_command(command: str, cwd: Path, timeout_s: float, what: str) -> None:
    """Run `command` with `sh -c` in `cwd`; raise HookFailed starting with `what` when it
    fails or overruns `timeout_s`."""
    process = subprocess.Popen(command, shell=True, cwd=cwd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               errors="replace", start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        raise HookFailed(f"{what} did not finish within {timeout_s:g} s: {command}\n"
                         f"{_tail(output)}") from None
    if process.returncode != 0:
        raise HookFailed(f"{what} exited {process.returncode}: {command}\n{_tail(output)}")


class Hooks:
    """The hooks of one target file: render and run them for its nodes."""

    def __init__(self, target: TargetFile) -> None:
        self._target = target

    def render(self, hook: str, node: NodeEntry, **extra: str) -> str:
        """The command `hook` runs for `node`, every value shell-quoted."""
        values = {"node": node.name, "address": node.address or "", "cluster": node.cluster,
                  "role": node.role, **node.vars, **extra}
        return self._target.hooks[hook].format_map(
            {name: shlex.quote(value) for name, value in values.items()})

    def run(self, hook: str, node: NodeEntry, **extra: str) -> None:
        run_command(self.render(hook, node, **extra), self._target.path.parent,
                    self._target.hook_timeout_s, f"hook {hook} of node {node.name}")

    def takes_port(self) -> bool:
        """Whether the partition hook can drop only TCP to one port."""
        return "port" in template_fields(self._target.hooks.get("partition", ""))


class HookControl:
    """A `NodeControl` by hooks; only the operations whose hooks exist are ever called
    (the node's capabilities say which)."""

    def __init__(self, hooks: Hooks, node: NodeEntry) -> None:
        self._hooks = hooks
        self._node = node

    @property
    def name(self) -> str:
        return self._node.name

    def kill(self) -> None:
        self._hooks.run("kill", self._node)

    def start(self) -> None:
        self._hooks.run("start", self._node)

    def pause(self) -> None:
        self._hooks.run("pause", self._node)

    def resume(self) -> None:
        self._hooks.run("resume", self._node)


class HookPartitions:
    """Drops by the `partition` and `heal` hooks. A new drop replaces the node's previous
    one: `heal` first, when something is in force, then `partition` once per peer. A
    drop of nothing always runs `heal`, so a node is healed even of what a previous run
    left behind."""

    def __init__(self, hooks: Hooks, target: TargetFile) -> None:
        self._hooks = hooks
        self._target = target
        self._in_force: set[str] = set()

    def drop(self, node: NodeEntry, peers: Mapping[str, str], to_port: int | None) -> None:
        """`node` drops what it receives from `peers` (name -> address)."""
        if to_port is not None and not self._hooks.takes_port():
            raise PortDropUnsupported(
                f"{self._target.path}: hooks.partition: has no {{port}} placeholder, so it "
                f"cannot drop only TCP to port {to_port} (asked of node {node.name})")
        if not peers or node.name in self._in_force:
            self._hooks.run("heal", node)
            self._in_force.discard(node.name)
        port = "" if to_port is None else str(to_port)
        for peer, address in sorted(peers.items()):
            self._in_force.add(node.name)
            self._hooks.run("partition", node, peer=peer, peer_address=address, port=port)
