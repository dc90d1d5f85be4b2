"""Our marker .proto and its committed Python module and type stub must not drift apart
(the same check tests/protocol makes for pulsar_api)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("module", [Path("wire") / "pulsar_markers_pb2.py",
                                    Path("wire") / "pulsar_markers_pb2.pyi"])
def test_generated_marker_module_matches_the_proto(tmp_path: Path, module: Path) -> None:
    subprocess.run(["bash", str(REPO / "scripts" / "gen_proto.sh"), str(tmp_path)], check=True)
    assert (tmp_path / module).read_text() == (REPO / module).read_text(), \
        f"{module} is stale: run scripts/gen_proto.sh"


def test_marker_field_numbers_are_pulsars() -> None:
    from wire import pulsar_markers_pb2 as pb

    def numbers(message: type) -> dict[str, int]:
        return {f.name: f.number for f in message.DESCRIPTOR.fields}

    assert {v.name: v.number for v in pb.MarkerType.DESCRIPTOR.values} == {
        "UNKNOWN_MARKER": 0, "REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST": 10,
        "REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE": 11, "REPLICATED_SUBSCRIPTION_SNAPSHOT": 12,
        "REPLICATED_SUBSCRIPTION_UPDATE": 13}
    assert numbers(pb.ReplicatedSubscriptionsSnapshotRequest) == {
        "snapshot_id": 1, "source_cluster": 2}
    assert numbers(pb.ReplicatedSubscriptionsSnapshotResponse) == {"snapshot_id": 1, "cluster": 2}
    assert numbers(pb.ReplicatedSubscriptionsSnapshot) == {
        "snapshot_id": 1, "local_message_id": 2, "clusters": 3}
    assert numbers(pb.ReplicatedSubscriptionsUpdate) == {
        "subscription_name": 1, "clusters": 2, "acknowledged": 1001}
    assert numbers(pb.ClusterMessageId) == {"cluster": 1, "message_id": 2}
    assert numbers(pb.MarkersMessageIdData) == {"ledger_id": 1, "entry_id": 2}
    assert numbers(pb.OriginalClusterPositionField) == {"original_cluster_position": 1001}
