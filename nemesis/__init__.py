"""Faults: partitions, kills, pauses, ZooKeeper session expiry."""
