#!/usr/bin/env bash
# Make sure the Debian packages the Go build needs are installed; install them when missing.
# Idempotent and quick when everything is there (no apt call at all).
#   exit 0: ready     exit 3: missing and cannot be installed here (the message says why)
#
# Note golang-github-golang-protobuf-1-5-dev: golang-google-grpc-dev depends on
# "golang-github-golang-protobuf-1-3-dev | ...-1-5-dev", and apt picks 1.3 by default, which
# predates the APIv2 messages protoc-gen-go 1.28 generates; grpc-go then cannot marshal them.
set -euo pipefail
packages=(golang-go golang-google-grpc-dev golang-google-protobuf-dev golang-github-golang-protobuf-1-5-dev
  protoc-gen-go protoc-gen-go-grpc protobuf-compiler libprotobuf-dev)
gocode=${GOCODE:-/usr/share/gocode}/src  # GOCODE: for testing this script

missing() {
  local what=()
  for cmd in go protoc protoc-gen-go protoc-gen-go-grpc; do
    command -v "$cmd" >/dev/null || what+=("$cmd")
  done
  [ -f /usr/include/google/protobuf/timestamp.proto ] || what+=("google/protobuf/timestamp.proto")
  [ -d "$gocode/google.golang.org/grpc" ] || what+=("$gocode/google.golang.org/grpc")
  [ -d "$gocode/google.golang.org/protobuf" ] || what+=("$gocode/google.golang.org/protobuf")
  [ -f "$gocode/github.com/golang/protobuf/proto/registry.go" ] || what+=("github.com/golang/protobuf >= 1.4")
  echo "${what[*]:-}"
}

gap=$(missing)
if [ -z "$gap" ]; then
  exit 0
fi
echo "ensure-toolchain: missing: $gap" >&2
as_root=()
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then as_root=(sudo -n); else
    echo "ensure-toolchain: cannot install ${packages[*]}: not root and no passwordless sudo" >&2
    exit 3
  fi
fi
if ! command -v apt-get >/dev/null; then
  echo "ensure-toolchain: cannot install ${packages[*]}: no apt-get (not Debian/Ubuntu)" >&2
  exit 3
fi
install() {
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -q --no-install-recommends \
    -o DPkg::Lock::Timeout=300 "${packages[@]}" >&2
}
if ! install; then
  echo "ensure-toolchain: first attempt failed; apt-get update and retry" >&2
  "${as_root[@]}" apt-get update -q -o DPkg::Lock::Timeout=300 >&2 || true
  install || { echo "ensure-toolchain: apt-get install ${packages[*]} failed" >&2; exit 3; }
fi
gap=$(missing)
if [ -n "$gap" ]; then
  echo "ensure-toolchain: still missing after install: $gap" >&2
  exit 3
fi
echo "ensure-toolchain: installed ${packages[*]}" >&2
