"""A harness to be interrupted or killed by the teardown tests: it starts two clusters of
one ZooKeeper each, cuts the WAN between them, prints `ready <run id>` and waits.
SIGUSR1 writes every thread's stack to stderr, so a test can say where one that would not
end was stuck.

    python -m tests.docker.harness_process RUN_ID [--reaper] [--run-dir DIR]
"""

from __future__ import annotations

import faulthandler
import signal
import sys
import time
from pathlib import Path

from harness.signals import sigterm_interrupts
from harness.targets.docker.deployment import DockerDeployment
from harness.targets.docker.iptables import IptablesNetwork
from harness.topology import Topology
from nemesis.partition import Partitioner


def main(argv: list[str]) -> None:
    run_id, reaper = argv[0], "--reaper" in argv[1:]
    run_dir = Path(argv[argv.index("--run-dir") + 1]) if "--run-dir" in argv else None
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    with sigterm_interrupts():
        deployment = DockerDeployment(
            Topology(clusters=("a", "b"), zookeepers=1, bookies=0, brokers=0),
            run_id=run_id, image_source="import", reaper=reaper, run_dir=run_dir)
        with deployment:
            Partitioner(IptablesNetwork(deployment.nodes)).cut_wan(["a-zk1"], ["b-zk1"])
            print(f"ready {run_id}", flush=True)
            # Bounded, and longer than any test waits: a signal that went unheeded must
            # not look like a teardown.
            time.sleep(600)


if __name__ == "__main__":
    main(sys.argv[1:])
