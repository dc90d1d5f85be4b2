"""Our reference implementation as local processes: ZooKeeper, bookies and brokers on
loopback, each a child process with a lifeline."""
