"""What cumulative acks covered: a delivery counts as acknowledged from the first cumulative
ack at which the highest position acknowledged in its subscription, cluster and segment
reached its own. (The checkers' verdicts over histories with cumulative acks are in
test_anomalies.py and test_mixes.py.)"""

from __future__ import annotations

import pyarrow as pa

from checkers.coverage import covered, frontiers_of

_SCOPE = {"run": "r", "topic": "t", "subscription": "s", "cluster": "a"}


def _marks(*marks: tuple[int, str, int]) -> pa.Table:
    """(ack index, position acknowledged, segment), each ack at time index * 1000."""
    return pa.table({**{k: pa.array([v] * len(marks), pa.string()) for k, v in _SCOPE.items()},
                     "segment": pa.array([m[2] for m in marks], pa.int64()),
                     "position": pa.array([m[1] for m in marks], pa.string()),
                     "ack_index": pa.array([m[0] for m in marks], pa.int64()),
                     "ack_time": pa.array([m[0] * 1000 for m in marks], pa.int64())})


def _recvs(*recvs: tuple[str, str | None, int, str]) -> pa.Table:
    """(value, position, segment, cluster)."""
    return pa.table({**{k: [v] * len(recvs) for k, v in _SCOPE.items() if k != "cluster"},
                     "cluster": [r[3] for r in recvs],
                     "segment": pa.array([r[2] for r in recvs], pa.int64()),
                     "value": [r[0] for r in recvs], "position": [r[1] for r in recvs]})


def test_a_delivery_is_covered_by_the_first_ack_whose_highest_position_reached_it() -> None:
    # In ack order: 1:5, then 1:3 (below the highest: covers nothing new), 1:8, 2:0.
    found = frontiers_of(_marks((20, "1:3", -1), (10, "1:5", -1), (30, "1:8", -1),
                              (40, "2:0", -1)))
    assert list(found.ack_index) == [10, 30, 40]
    got = covered(_recvs(("m0", "1:0", -1, "a"), ("m5", "1:5", -1, "a"),
                         ("m6", "1:6", -1, "a"), ("m5b", "1:5:0", -1, "a"),
                         ("m9", "1:9", -1, "a"), ("m21", "2:1", -1, "a")), found)
    assert dict(zip(got["value"].to_pylist(), got["ack_index"].to_pylist())) == {
        "m0": 10, "m5": 10, "m6": 30, "m5b": 30, "m9": 40}
    assert got["ack_time"].to_pylist() == [i * 1000 for i in got["ack_index"].to_pylist()]


def test_positions_compare_only_within_one_segment_and_cluster() -> None:
    found = frontiers_of(_marks((10, "1:5", 0), (20, "7:9", 1)))
    got = covered(_recvs(("in-0", "1:2", 0, "a"), ("in-1", "1:2", 1, "a"),
                         ("above-0", "1:6", 0, "a"), ("other-cluster", "1:2", 0, "b"),
                         ("no-segment", "1:2", -1, "a"), ("unknown", None, 0, "a"),
                         ("not-a-position", "x:y", 0, "a")), found)
    assert dict(zip(got["value"].to_pylist(), got["ack_index"].to_pylist())) == {
        "in-0": 10, "in-1": 20}


def test_no_cumulative_ack_covers_nothing() -> None:
    found = frontiers_of(_marks())
    assert covered(_recvs(("m0", "1:0", -1, "a")), found).num_rows == 0
