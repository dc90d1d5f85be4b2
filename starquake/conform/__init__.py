"""`starquake conform`: the conformance suite, run against a system starquake did not start."""
