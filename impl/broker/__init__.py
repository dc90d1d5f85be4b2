"""The broker process: Pulsar's binary protocol front end (producers, consumers, the four
subscription types) over the managed ledger, wired to ownership, PIP-57 and the admin API.
docs/broker.md describes it; `python -m impl.broker` runs it."""
