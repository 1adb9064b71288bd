#!/usr/bin/env bash
# Regenerate the committed Go code in api/v1alpha1 from ../proto (protoc + protoc-gen-go +
# protoc-gen-go-grpc, Debian's protobuf-compiler/protoc-gen-go/protoc-gen-go-grpc).
#   go/scripts/codegen.sh [OUT_ROOT]   (default: the go/ folder itself)
# tests/test_go_codegen_drift.py runs it into a temporary directory and compares.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here}
proto_root=$(cd "$here/../proto" && pwd)
well_known=${PROTOC_INCLUDE:-/usr/include}
mkdir -p "$out"
protoc -I"$proto_root" -I"$well_known" \
  --go_out="$out" --go_opt=module=volcano.sh/repack \
  --go-grpc_out="$out" --go-grpc_opt=module=volcano.sh/repack \
  "$proto_root"/volcano/repack/v1alpha1/*.proto
