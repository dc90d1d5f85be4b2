"""Our reference implementation in containers: the node image without a registry, the
deployment of a topology, iptables partitions, teardown and the reaper."""
