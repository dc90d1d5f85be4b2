"""Benchmarks: each prints its figures and the ratios its targets are stated in."""
