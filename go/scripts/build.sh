#!/usr/bin/env bash
# Build the Go module offline against Debian's packages: vendor/ from /usr/share/gocode, then
# repackctl and the client package's test binary (the conformance test runs it) into OUT_DIR.
#   go/scripts/build.sh OUT_DIR
# Module mode with -mod=vendor and GOPROXY=off: nothing is downloaded. Go's build cache
# (GOCACHE, default ~/.cache/go-build) keys on file contents, so a rebuild of unchanged code
# takes a couple of seconds.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: build.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
"$here/scripts/vendor.sh" >&2
cd "$here"
export GOFLAGS=-mod=vendor GOPROXY=off GONOSUMDB='*' GOSUMDB=off GO111MODULE=on CGO_ENABLED=0
# A CI user without a writable home still gets a build cache that survives between runs.
cache=$(go env GOCACHE 2>/dev/null || true)
if [ -z "$cache" ] || [ "$cache" = off ] || ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
  export GOCACHE="${TMPDIR:-/tmp}/repack-go-cache-$(id -u)"
fi
unformatted=$(gofmt -l api client cmd)
[ -z "$unformatted" ] || { echo "build.sh: not gofmt-clean: $unformatted" >&2; exit 1; }
go vet ./api/... ./client/... ./cmd/...   # not ./...: go/controlplane holds other modules (Go 1.26, the module proxy)
go build -o "$out/repackctl" ./cmd/repackctl
go test -c -o "$out/client.test" ./client
