#!/usr/bin/env bash
# go/controlplane/build.sh [--force] [--print-bin]
#
# Builds the real control plane from the Go module proxy into .controlplane/bin (git-ignored):
#   etcd, kube-apiserver, kube-controller-manager   (go/controlplane/kube,    k8s.io/kubernetes)
#   vc-scheduler, vc-controller-manager             (go/controlplane/volcano, volcano.sh/volcano)
#   vc-scheduler-repack, repack-plugin.test         (go/plugin: the same Volcano + the repack plugin)
#   volcano-oracle                                  (go/plugin/fidelity: Volcano's predicates/node order, for bench.fidelity)
#   kwok                                            (go/controlplane/kwok,    sigs.k8s.io/kwok)
# The versions are the go.mod files' (the one place they are written); /version of kube-apiserver
# reports the k8s.io/kubernetes version through the same ldflags Kubernetes' release build sets.
#
# Up to date means: the same Go toolchain and the same go.mod/go.sum/sources of a component. A
# component's binaries are also kept per such key under ${XDG_CACHE_HOME:-~/.cache}/repack-sidecar/
# controlplane, so a fresh clone on the same machine (CI) copies them instead of building again.
# Prints one line per component (built, cached or up to date, with seconds) and the total.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin="$root/.controlplane/bin"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/repack-sidecar/controlplane"
force=0
for arg in "$@"; do
    case "$arg" in
        --force) force=1 ;;
        --print-bin) echo "$bin"; exit 0 ;;
        *) echo "usage: $0 [--force] [--print-bin]" >&2; exit 2 ;;
    esac
done

if ! command -v go >/dev/null 2>&1; then
    echo "$0: go not found: the real control plane is built with Go >= 1.26 from the module proxy" >&2
    exit 3
fi
gover=$(go env GOVERSION)
case "$gover" in
    go1.2[6-9]*|go1.[3-9][0-9]*) ;;
    *) echo "$0: $gover is too old: go/controlplane/*/go.mod need Go >= 1.26" >&2; exit 3 ;;
esac
export GOFLAGS="${GOFLAGS:--buildvcs=false}"
export CGO_ENABLED=0
mkdir -p "$bin" "$cache"

# key DIR...: the toolchain, and the module files and Go sources under each DIR
key() {
    { echo "$gover"; for d in "$@"; do (cd "$d" && find . \( -name '*.go' -o -name go.mod -o -name go.sum \) \
        -not -path './.tools/*' -print0 | sort -z | xargs -0r cat); done; } | sha256sum | cut -c1-16
}

# build COMPONENT LDFLAGS OUT=PKG...: go build each package (in the component's module) to $bin/OUT;
# OUT=test:PKG builds PKG's test binary instead
build() {
    local comp=$1 ldflags=$2; shift 2
    local k outs=() started=$SECONDS dir=${dirs[$comp]}
    k=$(key "$dir" ${extra[$comp]:-})
    for spec in "$@"; do outs+=("${spec%%=*}"); done
    local stamp="$bin/.$comp.key"
    if [ "$force" = 0 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$k" ]; then
        local all=1
        for o in "${outs[@]}"; do [ -x "$bin/$o" ] || all=0; done
        if [ "$all" = 1 ]; then echo "$comp: up to date (${outs[*]})"; return; fi
    fi
    if [ "$force" = 0 ] && [ -f "$cache/$comp-$k/.complete" ]; then
        for o in "${outs[@]}"; do cp "$cache/$comp-$k/$o" "$bin/$o.tmp" && mv "$bin/$o.tmp" "$bin/$o"; done
        echo "$k" > "$stamp"
        echo "$comp: copied from the machine cache in $((SECONDS - started)) s (${outs[*]})"
        return
    fi
    for spec in "$@"; do
        local out=${spec%%=*} pkg=${spec#*=}
        if [ "${pkg#test:}" != "$pkg" ]; then
            (cd "$dir" && go test -c -ldflags "$ldflags" -o "$bin/$out.tmp" "${pkg#test:}")
        else
            (cd "$dir" && go build -ldflags "$ldflags" -o "$bin/$out.tmp" "$pkg")
        fi
        mv "$bin/$out.tmp" "$bin/$out"
    done
    rm -rf "$cache/$comp-"*
    mkdir -p "$cache/$comp-$k"
    for o in "${outs[@]}"; do cp "$bin/$o" "$cache/$comp-$k/$o"; done
    touch "$cache/$comp-$k/.complete"
    echo "$k" > "$stamp"
    echo "$comp: built in $((SECONDS - started)) s (${outs[*]})"
}

# where each component's module is; extra: other sources its key covers (a local replace)
declare -A dirs=([kube]="$here/kube" [volcano]="$here/volcano" [kwok]="$here/kwok" [plugin]="$root/go/plugin")
declare -A extra=([plugin]="$root/go/api $root/go/client")

modversion() { (cd "${dirs[$1]}" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$2"); }

total=$SECONDS
kube=$(modversion kube k8s.io/kubernetes)
minor=$(echo "$kube" | cut -d. -f2)
v=k8s.io/component-base/version
kflags="-s -w -X $v.gitVersion=$kube -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
kflags="$kflags -X $v.buildDate=1970-01-01T00:00:00Z"
build kube "$kflags" \
    etcd=./cmd/etcd \
    kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
    kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager

volcano=$(modversion volcano volcano.sh/volcano)
vv=volcano.sh/volcano/pkg/version
build volcano "-s -w -X $vv.Version=$volcano -X $vv.GitSHA=module-proxy -X $vv.Built=1970-01-01" \
    vc-scheduler=volcano.sh/volcano/cmd/scheduler \
    vc-controller-manager=volcano.sh/volcano/cmd/controller-manager

# vc-scheduler with the repack plugin compiled in (go/plugin), the fidelity oracle and the test
# binaries of the plugin and the oracle (tests/go/test_go_plugin.py runs them); the Volcano version and ldflags are the stock scheduler's
build plugin "-s -w -X $vv.Version=$volcano -X $vv.GitSHA=module-proxy+repack -X $vv.Built=1970-01-01" \
    vc-scheduler-repack=./cmd/vc-scheduler \
    volcano-oracle=./cmd/volcano-oracle \
    repack-plugin.test=test:./repack \
    fidelity.test=test:./fidelity

kwok=$(modversion kwok sigs.k8s.io/kwok)
build kwok "-s -w" kwok=sigs.k8s.io/kwok/cmd/kwok

echo "control plane ready in $((SECONDS - total)) s: Kubernetes $kube, Volcano $volcano, KWOK $kwok -> $bin"
