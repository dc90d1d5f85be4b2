"""The checkers' names, in the order a verdict lists them: what a scenario's
`expected_anomalies` may name, known without starting Spark (`checkers.check` holds
the checkers themselves, in this order)."""

CHECKER_NAMES = (
    "lost", "unexpected", "failed-delivered", "duplicate", "duplicate-window", "dual-write",
    "forked-position", "misrouted", "order", "contract", "stalled-subscription",
    "multi-position", "ack-unapplied")
