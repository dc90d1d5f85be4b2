"""Geo-replication's replicated subscriptions (PIP-33), independent of the broker.

The broker implements the small interfaces in `interfaces.py`; everything else here is
markers (`markers.py`), the per-topic controller (`controller.py`), the snapshot builder and
the per-subscription snapshot cache, and our extension for individually acknowledged
messages (`acknowledged.py`, document 003). docs/geo-replication.md tells the whole flow.
"""
