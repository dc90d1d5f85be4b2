"""Apache Pulsar itself as a backend: its official binary distribution, fetched through
Maven into a cache outside the repository, run as ZooKeeper, bookie and broker nodes of
the Docker backend's machinery (docs/apache-pulsar.md)."""
