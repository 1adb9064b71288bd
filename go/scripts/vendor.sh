#!/usr/bin/env bash
# Assemble go/vendor/ from Debian's packaged Go sources (/usr/share/gocode), offline.
#
# Why: Debian ships Go libraries as source trees for GOPATH builds, not as a module cache, and
# this machine has no module proxy. A vendor directory lets the go.mod module build with
# -mod=vendor and GOPROXY=off. Only the packages the module imports (tests included) are copied,
# and vendor/modules.txt is written against go.mod's require lines, so `go build` checks that the
# vendored versions are the ones go.mod names. Idempotent: the folder is rebuilt (a few seconds)
# unless nothing it depends on changed.
#   go/scripts/vendor.sh [GOCODE]     (default /usr/share/gocode)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
gocode=${1:-/usr/share/gocode}
module=volcano.sh/repack

# Up to date: same go.mod, same Go sources (their imports), same Debian package trees.
stamp=$(cd "$here" && { cat go.mod; find . -name '*.go' -not -path './vendor/*' -not -path './controlplane/*' | sort | xargs cat;
  awk '$1 ~ /\./ && NF >= 2 { print $1 }' go.mod | while read -r m; do stat -c '%n %Y' "$gocode/src/$m/go.mod" 2>&1; done
} | sha256sum | cut -d' ' -f1)
if [ -f "$here/vendor/modules.txt" ] && [ "$(cat "$here/vendor/.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "vendor.sh: $here/vendor is up to date"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. The import closure, computed in GOPATH mode over a copy of this module.
mkdir -p "$work/gopath/src/$module"
# (not ./controlplane: other modules, built with Go 1.26 from the module proxy)
(cd "$here" && tar --exclude=./vendor --exclude=./controlplane -cf - .) | tar -xf - -C "$work/gopath/src/$module"
pkgs=$(cd "$work/gopath/src/$module" && GO111MODULE=off GOPATH="$work/gopath:$gocode" GOFLAGS= \
  go list -deps -test -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./... | grep -v "^$module" | sort -u)

# 2. Each package's module: the longest go.mod-rooted prefix, with the version go.mod requires.
declare -A version
while read -r path ver; do version[$path]=$ver; done < <(awk '
  /^require \($/ { block = 1; next }
  block && /^\)/ { block = 0; next }
  block && NF >= 2 && $1 !~ /^\/\// { print $1, $2 }
  /^require [^(]/ { print $2, $3 }' "$here/go.mod")
declare -A modpkgs
for pkg in $pkgs; do
  mod=$pkg
  while [ ! -f "$gocode/src/$mod/go.mod" ]; do
    [ "$mod" = "${mod%/*}" ] && { echo "vendor.sh: no go.mod above $gocode/src/$pkg" >&2; exit 1; }
    mod=${mod%/*}
  done
  [ -n "${version[$mod]:-}" ] || { echo "vendor.sh: $pkg needs module $mod, which go.mod does not require" >&2; exit 1; }
  modpkgs[$mod]+="$pkg "
done

# 3. Copy the packages (no tests, no testdata) and write modules.txt in go.mod's order.
rm -rf "$here/vendor"
mkdir -p "$here/vendor"
while read -r mod; do
  ver=${version[$mod]}
  gover=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gocode/src/$mod/go.mod" 2>/dev/null | head -1)
  echo "# $mod $ver"
  echo "## explicit${gover:+; go $gover}"
  for pkg in $(printf '%s\n' ${modpkgs[$mod]:-} | sort); do
    echo "$pkg"
    mkdir -p "$here/vendor/$pkg"
    find "$gocode/src/$pkg" -maxdepth 1 -type f ! -name '*_test.go' -exec cp {} "$here/vendor/$pkg/" \;
  done
  [ -f "$gocode/src/$mod/LICENSE" ] && mkdir -p "$here/vendor/$mod" && cp "$gocode/src/$mod/LICENSE" "$here/vendor/$mod/"
done < <(printf '%s\n' "${!version[@]}" | sort) > "$here/vendor/modules.txt"
echo "$stamp" > "$here/vendor/.stamp"
echo "vendor.sh: $(printf '%s\n' $pkgs | wc -l) packages from $(printf '%s\n' "${!modpkgs[@]}" | wc -l) modules in $here/vendor"
