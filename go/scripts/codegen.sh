#!/usr/bin/env bash
# Regenerate the committed Go code in api/v1alpha1 from ../proto with pinned tools, all from the
# module proxy and PyPI: protoc-gen-go and protoc-gen-go-grpc at the versions go/tools/go.mod
# names (built into go/.tools, git-ignored), protoc from grpcio-tools (the test extra pins it).
#   go/scripts/codegen.sh [OUT_ROOT]   (default: the go/ folder itself; PYTHON: the interpreter
#                                      with grpcio-tools, default python3)
# tests/go/test_go_codegen_drift.py runs it into a temporary directory and compares byte for byte.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here}
proto_root=$(cd "$here/../proto" && pwd)
python=${PYTHON:-python3}
bin="$here/.tools"
mkdir -p "$out" "$bin"
(cd "$here/tools" && CGO_ENABLED=0 go build -o "$bin/" \
  google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc)
well_known=$("$python" -c 'import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"))')
"$python" -m grpc_tools.protoc -I"$proto_root" -I"$well_known" \
  --plugin=protoc-gen-go="$bin/protoc-gen-go" --plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" \
  --go_out="$out" --go_opt=module=volcano.sh/repack \
  --go-grpc_out="$out" --go-grpc_opt=module=volcano.sh/repack \
  "$proto_root"/volcano/repack/v1alpha1/*.proto
