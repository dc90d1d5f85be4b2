"""Every checker, declared once: its name (its key in a verdict), the definition a report
shows, the finder that judges it, and what else judging it needs.

The declarations are part of the verdict's format, so they sit with the history, where
every layer may read them: a scenario's `expected_anomalies` is checked against the names
without starting Spark, and a report shows the definitions without importing the
checkers. The finders run on Spark in `checkers/`, which this package may not import, so
an entry names its finder as `module:function`; `checkers.registry` binds the names to
the functions. Adding a checker is a module holding its finder and one entry here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckerEntry:
    name: str
    """The checker's stable name in `results.json` (docs/history.md defines each)."""
    definition: str
    """In our words, for the report; the normative definition is in docs/history.md."""
    finder: str
    """`module:function`, a `checkers.anomaly.Finder`: the anomaly rows of this checker and
    of any other checker naming the same finder (one pass decides them all)."""
    needs_drain: bool = False
    """Cannot decide a run without a completed `drain`: reports unknown there."""
    judges: str | None = None
    """`module:function` answering the runs an optional checker judges (those that set its
    bound); the other runs' results leave it out. None: every run is judged."""
    undecided: str | None = None
    """What the finder's rows under `<name>:undecided` are: units it could not judge, any
    of which makes the checker unknown (false still wins)."""

    @property
    def optional(self) -> bool:
        """Judged only in the runs that ask for it."""
        return self.judges is not None


_DELIVERIES = "checkers.delivery:deliveries"
_SEGMENTS = "checkers.segments:segment_checks"

# In the order a verdict lists them.
CHECKERS: tuple[CheckerEntry, ...] = (
    CheckerEntry(
        "lost", "An acknowledged send that a subscription existing before it never received.",
        _DELIVERIES, needs_drain=True),
    CheckerEntry("unexpected", "A delivery of a value nobody sent.", _DELIVERIES),
    CheckerEntry(
        "failed-delivered",
        "A delivery of a value whose send failed (certainly not written).", _DELIVERIES),
    CheckerEntry(
        "duplicate", "A delivery after the value was acknowledged in the same subscription "
                     "and cluster, not explained by a failover.", _DELIVERIES),
    # Measured with the deliveries (a `FAILOVER_WINDOW` row per failover with redeliveries),
    # set against the bound on the driver (`checkers.failover_windows.judged_windows`).
    CheckerEntry(
        "duplicate-window", "A failover whose duplicates reach back further than the bound.",
        _DELIVERIES),
    CheckerEntry(
        "dual-write",
        "A write to an ancestor segment after one of its children took a write.", _SEGMENTS),
    CheckerEntry(
        "forked-position", "Two different values at the same position.",
        "checkers.forked_position:forked_position"),
    CheckerEntry(
        "misrouted", "A send to a segment whose hash range does not hold the key's hash.",
        _SEGMENTS),
    CheckerEntry(
        "order",
        "Two values of one key first delivered in the opposite order to their sends.",
        _DELIVERIES),
    CheckerEntry(
        "contract", "A probe of the client contract that observed something other than "
                    "what it expected.",
        "checkers.contract:contract", undecided="probes could not run or be judged"),
    CheckerEntry(
        "stalled-subscription", "A subscription whose backlog waited, its cursor (every "
                                "segment's, on a scalable topic) still, while its consumers "
                                "were connected with nothing out, for longer than the bound.",
        "checkers.stalled:stalled_subscriptions"),
    CheckerEntry(
        "multi-position", "One value stored at more positions than a producer's resend can "
                          "leave (or at two, where the run deduplicates).", _DELIVERIES),
    CheckerEntry(
        "ack-unapplied", "An acknowledgement never confirmed whose message the final cursor "
                         "does not hold as acknowledged, and that was never delivered again.",
        _DELIVERIES, needs_drain=True),
    CheckerEntry(
        "unavailable", "A send that waited longer than the bound for its key to take a write "
                       "(its own success or a later send's).",
        "checkers.availability:unavailable", judges="checkers.availability:unavailable_bounds"),
    CheckerEntry(
        "reassigned", "A consumer's segments changed while neither the segments dealt out "
                      "nor the consumers did: a session the controller forgot.",
        "checkers.sessions:reassigned"),
    CheckerEntry(
        "zombie-broker", "A broker that kept answering its health check that it cannot "
                         "serve, without a break, for longer than the bound, instead of "
                         "shutting down.",
        "checkers.zombies:zombie_brokers", judges="checkers.zombies:zombie_bounds"),
)

CHECKER_NAMES = tuple(entry.name for entry in CHECKERS)
"""What `expected_anomalies` may name."""


def definition(name: str) -> str:
    """The report's definition of the checker `name` ("" for a name no entry declares, as
    in a verdict written by another version)."""
    return next((entry.definition for entry in CHECKERS if entry.name == name), "")
