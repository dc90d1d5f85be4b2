"""The checkers' names, in the order a verdict lists them (docs/history.md defines each):
part of the verdict's format, so a scenario's `expected_anomalies` can be checked without
starting Spark (`checkers.check` holds the checkers themselves, in this order)."""

CHECKER_NAMES = (
    "lost", "unexpected", "failed-delivered", "duplicate", "duplicate-window", "dual-write",
    "forked-position", "misrouted", "order", "contract", "stalled-subscription",
    "multi-position", "ack-unapplied", "unavailable", "reassigned", "zombie-broker")
