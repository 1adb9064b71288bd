#!/bin/sh
# Build the repack-sidecar wheel WITH its Cython kernels and prove it: the steps of the Dockerfile's build
# stage, kept here so that they run (and are tested, tests/project/test_packaging.py) where no Docker engine runs.
#
#   scripts/build-wheel-check.sh WHEEL_DIR VENV [SOURCE_DIR]
#
# 1. pip wheel with REPACK_REQUIRE_KERNELS=1: a kernel that does not compile (no compiler, no libc or
#    Python headers) fails the build instead of shipping the Python twins silently;
# 2. the wheel must hold the three compiled kernels (.so);
# 3. a clean venv at VENV gets the wheel (and its dependencies), and from outside the source tree
#    imports every kernel and checks sidecar.dispatch.kernels_built().
# Any failure exits non-zero. PYTHON (default python3) builds; extra pip wheel options in PIP_WHEEL_ARGS.
set -eu

WHEELS=${1:?usage: $0 WHEEL_DIR VENV [SOURCE_DIR]}
VENV=${2:?usage: $0 WHEEL_DIR VENV [SOURCE_DIR]}
SRC=${3:-.}
PYTHON=${PYTHON:-python3}

echo "build-wheel-check: building the wheel with REPACK_REQUIRE_KERNELS=1" >&2
# shellcheck disable=SC2086  # PIP_WHEEL_ARGS is a list of options
REPACK_REQUIRE_KERNELS=1 "$PYTHON" -m pip wheel --no-deps ${PIP_WHEEL_ARGS:-} -w "$WHEELS" "$SRC"

echo "build-wheel-check: the wheel must carry every kernel" >&2
"$PYTHON" - "$WHEELS" <<'PY'
import ast, glob, sys, zipfile

wheels = glob.glob(f"{sys.argv[1]}/volcano_repack_sidecar-*.whl")
if len(wheels) != 1:
    sys.exit(f"expected one volcano_repack_sidecar wheel in {sys.argv[1]}, found {wheels}")
wheel = zipfile.ZipFile(wheels[0])
names = wheel.namelist()
# the kernel list is sidecar.dispatch.KERNEL_MODULES, read from the wheel's own copy
tree = ast.parse(wheel.read("sidecar/dispatch.py"))
listed = next(
    node.value for node in tree.body
    if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "KERNEL_MODULES" for t in node.targets)
)
kernels = [m.replace(".", "/") for m in ast.literal_eval(listed)]
missing = [k for k in kernels if not any(n.startswith(k + ".") and n.endswith((".so", ".pyd")) for n in names)]
if missing:
    sys.exit(f"{wheels[0]} lacks the compiled kernels {missing}")
print(f"build-wheel-check: {wheels[0]} carries {len(kernels)} kernels", file=sys.stderr)
PY

echo "build-wheel-check: installing into a clean venv at $VENV" >&2
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q "$WHEELS"/volcano_repack_sidecar-*.whl

cd /  # not the source tree: import the installed package
"$VENV/bin/python" - <<'PY'
import importlib, sys

from sidecar.dispatch import KERNEL_MODULES, kernels_built

for module in KERNEL_MODULES:
    importlib.import_module(module)  # an ImportError here names the broken kernel
if not kernels_built():
    sys.exit("sidecar.dispatch.kernels_built() is False")
print("build-wheel-check: kernels_built() is True", file=sys.stderr)
PY
"$VENV/bin/repack-sidecar" --help >/dev/null
echo "build-wheel-check: ok" >&2
