"""Per-topic schemas (Pulsar's schema registry): the versions a topic's producers declared,
kept in ZooKeeper, and the compatibility rules a new schema must pass (docs/broker.md,
"Schemas")."""
