"""Workloads: what drives a run's clients, chosen by the scenario's `[workload] kind`.

Each is a `Workload` (harness/workloads/base.py) named in the registry
(harness/workloads/registry.py) with the knobs its class declares
(harness/workloads/knobs.py): `topic` (harness/workloads/topic.py), `scalable`
(harness/workloads/scalable.py), `contract` (harness/workloads/contract/, the client
contract's probes) and `auth` (its authentication probes only) on one cluster; `geo`
(harness/workloads/geo.py) and `migration` (harness/workloads/migration.py) on two or
more.
"""
