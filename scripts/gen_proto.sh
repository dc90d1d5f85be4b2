#!/usr/bin/env bash
# Regenerates the Python modules of our .proto files with grpcio-tools (no protoc binary
# needed). tests/protocol/test_frames.py (pulsar_api) and tests/replication/test_generated.py
# (pulsar_markers) fail when a module and its .proto drift apart.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$repo}
"$repo/.venv/bin/python" -m grpc_tools.protoc --proto_path="$repo" --python_out="$out" \
    impl/protocol/pulsar_api.proto impl/protocol/pulsar_markers.proto
