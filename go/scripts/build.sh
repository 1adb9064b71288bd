#!/usr/bin/env bash
# Build the Go module (module proxy, go.mod/go.sum pinned): repackctl and the client package's
# test binary (the conformance test runs it) into OUT_DIR, after gofmt and go vet.
#   go/scripts/build.sh OUT_DIR
# Go's module cache and build cache (GOMODCACHE, GOCACHE) make a rebuild of unchanged code take
# a couple of seconds; -mod=readonly: go.mod and go.sum are never rewritten by a build.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: build.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$here"
export GOFLAGS=-mod=readonly CGO_ENABLED=0
# A CI user without a writable home still gets a build cache that survives between runs.
cache=$(go env GOCACHE 2>/dev/null || true)
if [ -z "$cache" ] || [ "$cache" = off ] || ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
  export GOCACHE="${TMPDIR:-/tmp}/repack-go-cache-$(id -u)"
fi
unformatted=$(gofmt -l api client cmd)
[ -z "$unformatted" ] || { echo "build.sh: not gofmt-clean: $unformatted" >&2; exit 1; }
go vet ./...   # go/tools and go/controlplane are modules of their own: not in ./...
go build -o "$out/repackctl" ./cmd/repackctl
go test -c -o "$out/client.test" ./client
