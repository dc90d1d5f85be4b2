"""`starquake run`: one scenario against a real cluster, from seed to verdict and report."""
