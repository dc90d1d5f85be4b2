"""`starquake explore --target FILE`: what the target offers the draws, said before the
first run, and the command that draws and runs one of its seeds again."""

from __future__ import annotations

import shlex
from pathlib import Path

from rich.console import Console

from harness.targets.external.features import probe_features
from harness.targets.external.target import ExternalTarget
from history.errors import EnvironmentProblem
from scenarios.offer import Offer


def target_offer(target: ExternalTarget, console: Console) -> Offer:
    """The system features the target offers (probed, or claimed in its file) and its
    nodes; a target that offers no workload explore draws cannot be explored (exit 4)."""
    support = probe_features(target)
    offer = Offer.of(target, [name for name, found in support.items() if found.supported])
    if not offer.kinds:
        raise EnvironmentProblem(f"{target.file.path}: the target offers none of the "
                                 f"workloads explore draws: persistent: "
                                 f"{support['persistent'].why}")
    controls = sorted({c for node in offer.nodes for c in node.capabilities})
    console.print(f"explore: target {target.file.name} ({target.file.path}): workloads "
                  f"{', '.join(offer.kinds)}; node controls {', '.join(controls) or 'none'}",
                  markup=False)
    return offer


def target_command(target_file: Path, scenario: Path, top: Path,
                   workloads: tuple[str, ...] | None = None) -> str:
    """What draws and runs the seed of `scenario` (`explore-<seed>.toml`, or
    `explore-<workloads>-<seed>.toml` when drawn among `workloads`) again: its scenario is
    that seed's within the target's offer, and `starquake reproduce` deploys a cluster
    rather than aim at one."""
    seed = scenario.stem.rsplit("-", 1)[1]
    among = ["--workloads", ",".join(workloads)] if workloads else []
    return shlex.join(["starquake", "explore", "--target", str(target_file), "--seed", seed,
                       *among, "--runs-dir", str(top)])
