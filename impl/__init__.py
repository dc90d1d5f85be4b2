"""The reference implementation: the system under test when no third party's is given.

It knows nothing of the harness, the nemesis or the checkers.
"""
