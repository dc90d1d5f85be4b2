"""Target files written by starquake for what it started (`starquake serve --target-file`,
`starquake cluster up --target-file`): our reference implementation described exactly as a
third party's system is, so `starquake conform` validates it through the same door."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from harness.target import LookupEndpoint, TargetCluster


def _value(value: object) -> str:
    """A TOML value: JSON's strings, numbers, booleans and arrays are TOML's too."""
    return json.dumps(value)


def target_file_text(name: str, clusters: Sequence[TargetCluster], session_timeout_s: float,
                     controls: Mapping[str, Mapping[str, str]], *, header: str = "",
                     hooks: Mapping[str, str] | None = None,
                     lookup: LookupEndpoint | None = None,
                     snapshot_timeout_s: float | None = None,
                     metadata_loss_shutdown_s: float | None = None) -> str:
    """The target file of `clusters`; `controls` gives each node's control keys
    (`control`, `container`, ...), and nodes it leaves out take no faults. Without
    `snapshot_timeout_s` the file leaves it to the default, Pulsar's; without
    `metadata_loss_shutdown_s` it promises no shutdown bound."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    lines += [f"name = {_value(name)}", f"session_timeout_s = {session_timeout_s:g}"]
    if snapshot_timeout_s is not None:
        lines.append(f"snapshot_timeout_s = {snapshot_timeout_s:g}")
    if metadata_loss_shutdown_s is not None:
        lines.append(f"metadata_loss_shutdown_s = {metadata_loss_shutdown_s:g}")
    if hooks:
        lines += ["", "[hooks]", *(f"{key} = {_value(text)}" for key, text in hooks.items())]
    if lookup is not None:
        lines += ["", "[lookup]", f"service_url = {_value(lookup.service_url)}",
                  f"admin_url = {_value(lookup.admin_url)}"]
    for cluster in clusters:
        lines += ["", "[[clusters]]", f"name = {_value(cluster.name)}",
                  f"service_urls = {_value(list(cluster.service_urls))}",
                  f"admin_urls = {_value(list(cluster.admin_urls))}"]
        if cluster.metadata_store:
            lines.append(f"metadata_store = {_value(cluster.metadata_store)}")
        for node in cluster.nodes:
            lines += ["", "[[clusters.nodes]]", f"name = {_value(node.name)}",
                      f"role = {_value(node.role)}", f"address = {_value(node.address)}"]
            lines += [f"{key} = {_value(text)}"
                      for key, text in controls.get(node.name, {}).items()]
    return "\n".join(lines) + "\n"
