#!/bin/sh
# ensure-debian-packages.sh PKG...: make sure the Debian packages PKG... are installed.
#
# Idempotent: packages already installed are left alone and nothing is fetched. Missing ones are
# installed with apt-get when this runs as root on a system with apt; otherwise it says why on
# stderr and exits non-zero, so a caller (a test fixture, a CI step) can skip with that reason.
# Exit codes: 0 all installed; 1 installation failed; 2 usage; 3 cannot install here (no apt, not root).
set -u

if [ "$#" -eq 0 ]; then
    echo "usage: $0 PKG..." >&2
    exit 2
fi

missing=""
for pkg in "$@"; do
    case "$pkg" in
        -*|*[!A-Za-z0-9.+:-]*) echo "$0: not a Debian package name: $pkg" >&2; exit 2 ;;
    esac
    status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    if [ "$status" != "installed" ]; then
        missing="$missing $pkg"
    fi
done
if [ -z "$missing" ]; then
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
    echo "$0: cannot install$missing: apt-get/dpkg not found (not a Debian-based system)" >&2
    exit 3
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "$0: cannot install$missing: needs root (run: sudo apt-get install -y$missing)" >&2
    exit 3
fi

export DEBIAN_FRONTEND=noninteractive
# try from the current package lists first; refresh them only if that fails (stale or empty lists)
# shellcheck disable=SC2086
if ! apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1; then
    if ! apt-get update -q >/dev/null 2>&1; then
        echo "$0: apt-get update failed (no network or no mirror?); cannot install$missing" >&2
        exit 1
    fi
    # shellcheck disable=SC2086
    if ! apt-get install -y -q --no-install-recommends $missing >&2; then
        echo "$0: apt-get install failed for$missing" >&2
        exit 1
    fi
fi
echo "$0: installed$missing" >&2
exit 0
