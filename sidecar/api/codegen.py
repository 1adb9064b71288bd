"""Regenerate the committed protobuf/gRPC modules from proto/.

The generated code is committed so the package installs without grpcio-tools;
tests/project/test_codegen_drift.py fails when it no longer matches the .proto files.
protoc names imports after the proto package (``volcano.repack.v1alpha1``), which
is not an importable Python package here, so imports are rewritten to
``sidecar.api.v1alpha1``.

Usage: python -m sidecar.api.codegen [--out DIR]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTO_ROOT = ROOT / "proto"
PROTO_PACKAGE = "volcano/repack/v1alpha1"
PY_PACKAGE = "sidecar.api.v1alpha1"
DEFAULT_OUT = Path(__file__).resolve().parent / "v1alpha1"

_IMPORT = re.compile(r"^from volcano\.repack\.v1alpha1 import ", re.MULTILINE)


def generate(out: Path) -> list[Path]:
    """Run protoc into ``out`` and return the files written."""
    import grpc_tools
    from grpc_tools import protoc  # build/dev dependency only

    protos = sorted((PROTO_ROOT / PROTO_PACKAGE).glob("*.proto"))
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            "protoc",
            f"-I{PROTO_ROOT}",
            f"-I{well_known}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            f"--grpc_python_out={tmp}",
            *[str(p) for p in protos],
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed")
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for src in sorted((Path(tmp) / PROTO_PACKAGE).iterdir()):
            text = _IMPORT.sub(f"from {PY_PACKAGE} import ", src.read_text())
            if src.name.endswith("_pb2_grpc.py") and "def add_" not in text:
                continue  # protoc writes an empty stub for files without services
            dst = out / src.name
            dst.write_text(text)
            written.append(dst)
        init = out / "__init__.py"
        init.write_text('"""Generated from proto/volcano/repack/v1alpha1 by sidecar.api.codegen."""\n')
        written.append(init)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ns = parser.parse_args(argv)
    for path in generate(ns.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
