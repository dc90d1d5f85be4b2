#!/usr/bin/env bash
# Regenerates impl/protocol/pulsar_api_pb2.py from our .proto with grpcio-tools (no protoc
# binary needed). tests/protocol/test_generated.py fails when the two drift apart.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$repo}
"$repo/.venv/bin/python" -m grpc_tools.protoc --proto_path="$repo" --python_out="$out" \
    impl/protocol/pulsar_api.proto
