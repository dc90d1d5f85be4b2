"""A system starquake did not start, made ready for a command's runs and tended between
them: what `starquake conform` and `starquake explore --target` share.

Nothing here starts or stops the system: it is the user's. Before the first run, the file
is loaded, the system reached, and any partition a killed harness left in force lifted;
after a run that may have had a broker shut itself down (PIP-57), every broker the target
lets us start is started again, as its supervisor would, so the next run finds as many as
the last one did.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console

from harness.health_probe import read_health
from harness.target import Target
from harness.targets.external.file import load_target_file
from harness.targets.external.reachability import check_reachable
from harness.targets.external.target import ExternalTarget
from history.errors import EnvironmentProblem

RESTART_WAIT_S = 60.0
"""How long a broker started again after a run may take to answer its health check before
the next run begins anyway."""


def reach_target(target_file: Path) -> ExternalTarget:
    """The target `target_file` describes, reached (exit 3 for a bad file, 4 when it cannot
    be reached), with nothing left cut off."""
    target = ExternalTarget(load_target_file(target_file))
    check_reachable(target)
    heal_leftovers(target)
    return target


def heal_leftovers(target: Target) -> None:
    """Let all traffic through on every node we can partition: every run heals what it
    broke, but a harness killed outright (SIGKILL, a lost machine) cannot, and its drops
    would still be in force."""
    network = target.network
    if network is not None:
        for name in network.names:
            network.drop(name, ())


def start_brokers_again(target: Target, console: Console) -> None:
    """Start every broker with process control (`start` leaves a running one alone) and
    wait, up to RESTART_WAIT_S, while one is down or unhealthy: a broker that shut
    down as PIP-57 asks stays down until something starts it, and the next run would
    find one broker fewer than this one did."""
    waiting = {node.name: cluster.broker_admin_urls[node.name]
               for cluster in target.clusters for node in cluster.of_role("broker")
               if "kill" in node.capabilities}
    for name in list(waiting):
        try:
            target.control(name).start()
        except EnvironmentProblem as exc:  # what ran so far must still be written
            console.print(f"  could not start {name} again: {exc}", markup=False)
            del waiting[name]
    deadline = time.monotonic() + RESTART_WAIT_S
    while waiting and time.monotonic() < deadline:
        waiting = {name: url for name, url in waiting.items()
                   if read_health(url)["answer"] in ("down", "unhealthy")}
        if waiting:
            time.sleep(1.0)
    if waiting:
        console.print(f"  still down or unhealthy {RESTART_WAIT_S:g} s after a start: "
                      f"{', '.join(sorted(waiting))}", markup=False)
