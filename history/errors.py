"""Exit codes shared by every command, and the error type the command line turns into them.

Codes follow the history contract: 0 valid, 1 invalid, 2 unknown, 3 bad input or usage.
Commands that do not end in a verdict use 0 for success and 3 for bad input; 4 means an
environment problem (a cluster or engine that cannot be reached), so that CI can tell a
broken machine from a broken system under test.
"""

from __future__ import annotations

VALID = 0
INVALID = 1
UNKNOWN = 2
BAD_INPUT = 3
ENVIRONMENT = 4


class StarquakeError(Exception):
    """An error a user can act on: the message names what is wrong and where."""

    exit_code: int = BAD_INPUT


class BadInput(StarquakeError):
    """Malformed input: a scenario, a history, a flag."""

    exit_code = BAD_INPUT


class EnvironmentProblem(StarquakeError):
    """Something outside our input is missing or unreachable: a cluster, a binary, an engine."""

    exit_code = ENVIRONMENT
