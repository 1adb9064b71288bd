"""Every command in the README and in docs/ still parses: a reader who copies one meets no unknown
flag, no missing file, no module that moved.

Commands are the lines of shell code blocks (untagged or ``sh``/``bash``/``console``; ``text``,
``promql``, ``json`` and ``yaml`` blocks are not commands), continuations joined, split into the
commands of a pipeline or list. Each is checked by what it runs:

* ``repack-sidecar ...`` (also ``python -m sidecar``): parsed by the CLI's own parser;
* ``python -m MODULE ...``: the module exists; a benchmark's or ``realcluster``'s arguments are
  parsed by its own ``main`` (stopped right after parsing, nothing runs);
* a script of this repository: it exists and is executable, with the flags it takes;
* ``kubectl``: every file or folder it is given (``-f``, ``-k``, ``--patch-file``) exists;
* ``grpcurl``: every service and method it names is in the contract;
* ``docker build``: its Dockerfile exists.

Any other program must be listed in ``UNCHECKED``, so a new kind of command gets a check.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import itertools
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from sidecar.api.v1alpha1 import service_pb2
from sidecar.cli import build_parser
from sidecar.cli.parser import UsageError

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_FENCES = ("", "sh", "bash", "console")
#: programs whose lines are not checked beyond existing in a doc (the shell's and the system's)
UNCHECKED = {"python3", "pip", ".venv/bin/pip", ".", "export", "kill", "curl", "jq", "grep", "printf", "cd", "sleep"}
#: modules run with ``python -m`` whose arguments are parsed by their ``main(argv)``
PARSED_MODULES = re.compile(r"^(bench\.\w+|realcluster)$")
SCRIPTS = {"go/controlplane/build.sh": {"--force", "--print-bin"}, "go/scripts/codegen.sh": set()}
SEPARATORS = {"&&", "||", "|", ";", "&"}


class Parsed(Exception):
    """Raised by the patched ``parse_args``: the arguments parsed, nothing more is run."""


def commands() -> list[tuple[str, list[str]]]:
    """(where, argv) for every command in a shell block of the README and docs/."""
    out: list[tuple[str, list[str]]] = []
    for doc in DOCS:
        for block in re.finditer(r"^```(\w*)\n(.*?)^```", doc.read_text(), re.S | re.M):
            if block.group(1) not in SHELL_FENCES:
                continue
            line_no = doc.read_text()[: block.start()].count("\n") + 2
            pending = ""
            for offset, line in enumerate(block.group(2).replace("\\\n", " ").splitlines()):
                pending += line + "\n"
                try:
                    tokens = _tokens(pending)
                except ValueError:  # a quotation that goes on to the next line
                    continue
                pending = ""
                argv: list[str] = []
                for token in [*tokens, ";"]:
                    if token in SEPARATORS:
                        if argv:
                            out.append((f"{doc.relative_to(ROOT)}:{line_no + offset}", argv))
                        argv = []
                    else:
                        argv.append(token)
            assert not pending, f"{doc.name}: unbalanced quotes in a code block: {pending[:80]}"
    return out


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split, lexer.commenters = True, "#"
    return list(lexer)


def _program(argv: list[str]) -> tuple[str, list[str]]:
    """(what runs, its arguments): ``python -m X`` is ``-m X``; a venv's binary its name."""
    head, rest = argv[0], argv[1:]
    if re.fullmatch(r"(\.venv/bin/)?python3?", head) and rest[:1] == ["-m"] and len(rest) > 1:
        return f"-m {rest[1]}", rest[2:]
    return head.removeprefix(".venv/bin/"), rest


def _parse_with_main(module: str, args: list[str]) -> None:
    real = argparse.ArgumentParser.parse_args

    def parse_then_stop(self: argparse.ArgumentParser, *a: Any, **k: Any) -> Any:
        raise Parsed(real(self, *a, **k))

    argparse.ArgumentParser.parse_args = parse_then_stop  # type: ignore[method-assign]
    try:
        main = importlib.import_module(module if module != "realcluster" else "realcluster.__main__").main
        with pytest.raises(Parsed):
            main(args)
    finally:
        argparse.ArgumentParser.parse_args = real  # type: ignore[method-assign]


def check(argv: list[str]) -> None:
    program, args = _program(argv)
    if program in ("repack-sidecar", "-m sidecar"):
        build_parser().parse_args(args)  # SystemExit on a bad command line
    elif program == "-m pytest":
        assert all(a.startswith("-") or (ROOT / a.split("::")[0]).exists() for a in args), args
    elif program.startswith("-m "):
        module = program[3:]
        spec = importlib.util.find_spec(module)
        assert spec is not None, f"no module {module}"
        runnable = spec.submodule_search_locations is None or importlib.util.find_spec(f"{module}.__main__")
        assert runnable, f"python -m {module}: a package without __main__"
        if PARSED_MODULES.match(module):
            _parse_with_main(module, args)
    elif program in SCRIPTS:
        path = ROOT / program
        assert path.is_file() and os.access(path, os.X_OK), f"{program} missing or not executable"
        assert set(args) <= SCRIPTS[program], f"{program} takes {sorted(SCRIPTS[program])}, not {args}"
    elif program == "kubectl":
        for flag, value in itertools.pairwise(args):
            if flag in ("-f", "--filename", "-k", "--kustomize", "--patch-file") and value != "-":
                assert value.startswith("http") or (ROOT / value).exists(), f"kubectl {flag} {value}: no such file"
    elif program == "grpcurl":
        services = {s.full_name: s for s in service_pb2.DESCRIPTOR.services_by_name.values()}
        for token in args:
            found = re.fullmatch(r"(volcano\.repack\.v1alpha1\.\w+)(?:/(\w+))?", token)
            if found:
                service = services.get(found.group(1))
                assert service is not None, f"no service {found.group(1)}"
                assert found.group(2) is None or found.group(2) in service.methods_by_name, f"no method {token}"
    elif program == "docker":
        if "-f" in args:
            assert (ROOT / args[args.index("-f") + 1]).is_file()
    else:
        assert program in UNCHECKED or "=" in program, f"{program}: no check for this program (UNCHECKED?)"


COMMANDS = commands()


def test_the_docs_hold_commands() -> None:
    """The extraction finds what it should (an empty list would make the test below vacuous)."""
    programs = {_program(argv)[0] for _, argv in COMMANDS}
    assert {"repack-sidecar", "kubectl", "grpcurl", "-m realcluster", "go/controlplane/build.sh"} <= programs
    assert any(p.startswith("-m bench.") for p in programs)


@pytest.mark.parametrize(("where", "argv"), COMMANDS, ids=[f"{w} {' '.join(a)[:60]}" for w, a in COMMANDS])
def test_the_command_parses(where: str, argv: list[str]) -> None:
    check(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["repack-sidecar", "sandbox", "serve"],
        ["repack-sidecar", "plan", "--snapshot"],
        [".venv/bin/python", "-m", "bench.watcher_execute", "--no-such-flag"],
        ["python", "-m", "tests.realcluster", "up"],
        ["kubectl", "apply", "-f", "manifests/crd/scheduling.volcano.sh_podgroups.yaml"],
        ["grpcurl", "-plaintext", "127.0.0.1:50151", "volcano.repack.v1alpha1.Repack/Reserve"],
        ["go/controlplane/build.sh", "--fast"],
        ["helm", "install"],
    ],
)
def test_a_stale_command_is_caught(argv: list[str]) -> None:
    with pytest.raises((AssertionError, SystemExit, UsageError)):
        check(argv)
