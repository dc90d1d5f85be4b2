"""What cumulative acks covered: a delivery counts as acknowledged from the first cumulative
ack at which the highest position acknowledged in its subscription, cluster and segment
reached its own. (The checkers' verdicts over histories with cumulative acks are in
test_anomalies.py and test_mixes.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from checkers.coverage import covered, frontiers_of, load_frontiers, write_frontiers

_SCOPE = {"run": "r", "topic": "t", "subscription": "s", "cluster": "a"}


def _marks(*marks: tuple[int, str, int], run: str = "r") -> pa.Table:
    """(ack index, position acknowledged, segment), each ack at time index * 1000."""
    scope = {**_SCOPE, "run": run}
    return pa.table({**{k: pa.array([v] * len(marks), pa.string()) for k, v in scope.items()},
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


def test_frontiers_read_back_from_their_files_cover_as_the_driver_s_do(tmp_path: Path) -> None:
    """The tasks read each run's frontiers from a file (checkers.coverage says why); two
    runs' files read together cover each run's deliveries by its own acks."""
    first, second = tmp_path / "r.paired" / "frontiers.arrow", tmp_path / "q.paired" / "f.arrow"
    for path in (first, second):
        path.parent.mkdir()
    write_frontiers(frontiers_of(_marks((10, "1:5", -1), (30, "1:8", -1))), first)
    write_frontiers(frontiers_of(_marks((50, "1:2", -1), run="q")), second)
    recvs = pa.concat_tables([_recvs(("m4", "1:4", -1, "a"), ("m7", "1:7", -1, "a")),
                              _recvs(("q1", "1:1", -1, "a")).set_column(
                                  0, "run", pa.array(["q"]))])
    got = covered(recvs, load_frontiers((str(first), str(second))))
    assert dict(zip(got["value"].to_pylist(), got["ack_index"].to_pylist())) == {
        "m4": 10, "m7": 30, "q1": 50}
    # A file written again (a history paired again) is read again, not served from memory.
    write_frontiers(frontiers_of(_marks((70, "1:9", -1))), first)
    os.utime(first, ns=(1, 1))
    got = covered(recvs, load_frontiers((str(first), str(second))))
    assert set(got["ack_index"].to_pylist()) == {70, 50}


def test_frontiers_without_any_entry_are_written_and_cover_nothing(tmp_path: Path) -> None:
    path = tmp_path / "frontiers.arrow"
    write_frontiers(frontiers_of(_marks()), path)
    assert covered(_recvs(("m0", "1:0", -1, "a")), load_frontiers((str(path),))).num_rows == 0
