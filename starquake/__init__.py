"""The `starquake` command line: one entry point over every package."""
