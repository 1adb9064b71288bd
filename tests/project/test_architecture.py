"""The layout tells the architecture: layers import one way, and no module grows into a room of its own.

Every ``import`` in ``sidecar/`` — including imports inside functions, which lazy front doors use
— is read with ``ast`` and checked against the layer order

    api, base (errors, dispatch, heap, logs, wording, kubeobj) < snapshot < mirror < repack < scenarios | service
    < server | client | watcher < fake < cli < __main__

A module may import its own package and any lower layer, never a higher one or a peer of its
layer. The fake cluster (an in-memory fake of the watcher's cluster port with a simulated Volcano)
may use the mirror to bind pods like Volcano and the watcher's port (the interface it answers), and
only the CLI's demo may use it. Inside the watcher, the controller kit (``watcher/kit``) knows no
reconciler: it imports nothing of the watcher but itself and the reporting hub (``observer``).
No production module names a test double (no word of the retired sandbox, in Python or Go).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "sidecar"
GENERATED = ROOT / "api" / "v1alpha1"

LAYERS: list[set[str]] = [
    {"api"},
    {"errors", "dispatch", "heap", "logs", "metricsport", "wording", "kubeobj"},
    {"snapshot"},
    {"mirror"},
    {"repack"},
    {"scenarios", "service"},
    {"server", "client", "watcher"},
    {"fake"},
    {"cli"},
    {"__main__"},
]
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}
#: what the fake may use (of the watcher: its port only), and who may use it
FAKE_USES = {"api", "errors", "dispatch", "heap", "logs", "kubeobj", "snapshot", "mirror", "watcher"}
FAKE_USERS = {"cli", "__main__"}
#: what the watcher's controller kit may import of the watcher besides itself
KIT_USES = ("sidecar.watcher.kit", "sidecar.watcher.observer")
#: layers that must stay transport-free (a watcher or an HTTP intake calls them in process)
NO_GRPC = {"snapshot", "mirror", "repack", "scenarios", "service"}
MAX_LINES = 400


def _modules() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if GENERATED not in p.parents)


def _part(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    out: list[tuple[int, str]] = []
    package = ".".join(("sidecar", *path.relative_to(ROOT).with_suffix("").parts[:-1]))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            out.append((node.lineno, target))
            if target == "sidecar":  # `from sidecar import dispatch`
                out += [(node.lineno, f"sidecar.{alias.name}") for alias in node.names]
    return out


def verdict(src: str, target: str) -> str | None:
    """Why package ``src`` may not import ``target`` (a dotted module name), or None if it may."""
    top = target.split(".")[0]
    if top == "grpc" and src in NO_GRPC:
        return f"the {src} layer stays transport-free"
    if top != "sidecar" or target == "sidecar":
        return None
    dst = target.split(".")[1]
    if dst == src:
        return None
    if dst not in LAYER_OF:
        return f"{dst} has no layer in tests/project/test_architecture.py"
    if src == "fake" and (dst not in FAKE_USES or (dst == "watcher" and not target.startswith("sidecar.watcher.kit"))):
        return f"the fake uses only {sorted(FAKE_USES)} (of the watcher, its kit)"
    if dst == "fake" and src not in FAKE_USERS:
        return "only the CLI's demo uses the fake"
    if LAYER_OF[src] <= LAYER_OF[dst]:
        return f"{src} (layer {LAYER_OF[src]}) may not use {dst} (layer {LAYER_OF[dst]})"
    return None


def _violations() -> list[str]:
    found: list[str] = []
    for path in _modules():
        src = _part(path)
        if src == "__init__":
            continue
        for line, target in _imports(path):
            why = verdict(src, target)
            if why is not None:
                found.append(f"{path.relative_to(ROOT.parent)}:{line} imports {target}: {why}")
    return found


def test_every_package_has_a_layer() -> None:
    parts = {_part(p) for p in _modules()} - {"__init__"}
    assert parts <= set(LAYER_OF), sorted(parts - set(LAYER_OF))


def test_layers_import_one_way() -> None:
    assert _violations() == []


@pytest.mark.parametrize(
    ("src", "target", "allowed"),
    [
        ("service", "sidecar.repack.planner", True),
        ("server", "sidecar.service", True),
        ("snapshot", "sidecar.mirror.core", False),
        ("mirror", "sidecar.repack.receivers", False),
        ("service", "sidecar.server.config", False),
        ("client", "sidecar.server.config", False),
        ("service", "grpc", False),
        ("fake", "sidecar.mirror.core", True),
        ("fake", "sidecar.watcher.kit.port", True),
        ("fake", "sidecar.watcher.runner", False),
        ("fake", "sidecar.service", False),
        ("watcher", "sidecar.fake", False),
        ("cli", "sidecar.fake", True),
    ],
)
def test_the_rule(src: str, target: str, allowed: bool) -> None:
    assert (verdict(src, target) is None) is allowed


def test_the_controller_kit_knows_no_reconciler() -> None:
    """``watcher/kit`` is controller-runtime's role: DryRun, Execute and the gate stand on it, never
    the other way round (issue 36 item 2)."""
    found = []
    for path in (ROOT / "watcher" / "kit").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "sidecar.watcher":  # `from sidecar.watcher import x`
                targets = [f"sidecar.watcher.{a.name}" for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            found += [f"{path.relative_to(ROOT.parent)}:{node.lineno} imports {t}" for t in targets
                      if t.startswith("sidecar.watcher") and not t.startswith(KIT_USES)]  # fmt: skip
    assert found == []


def test_no_production_module_names_a_test_double() -> None:
    """The retired API emulator left an annotation behind that changed how a real pod carrying it was
    planned (issue 36); nothing in the product, Python or Go, may name a test double again."""
    go = ROOT.parent / "go"
    sources = [*_modules(), *(p for p in go.rglob("*.go") if "api" not in p.relative_to(go).parts[:1])]
    named = [str(p.relative_to(ROOT.parent)) for p in sources if "sandbox" in p.read_text().lower()]
    assert named == []


def test_no_two_classes_share_a_name() -> None:
    """One name, one concept: a reader who meets ``Planner`` or ``Eviction`` knows which one it is."""
    where: dict[str, list[str]] = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(str(path.relative_to(ROOT.parent)))
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


def test_the_checker_sees_lazy_and_relative_imports() -> None:
    """The rule above would pass vacuously if the parser missed imports; make sure it does not."""
    module = ROOT / "mirror" / "core.py"
    targets = {t for _, t in _imports(module)}
    assert "sidecar.snapshot.state" in targets
    cli = {t for _, t in _imports(ROOT / "cli" / "__init__.py")}
    assert "sidecar.cli.offline" in cli, "the CLI's offline path is imported lazily, inside its commands"
    assert "sidecar.client" in cli, "so is the gRPC client"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_outgrows_its_room(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT.parent)} has {lines} lines; split it by concept"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _cycles() -> list[list[str]]:
    """Import cycles among ``sidecar`` modules, every import counted (function-level and
    ``TYPE_CHECKING`` ones too: a lazy import hides a circle, it does not remove it). ``from
    package import module`` counts as importing the module; a package's ``__init__`` is left out
    (it re-exports what lies below it)."""
    names = {_module_name(p): p for p in _modules() if p.name != "__init__.py"}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        deps: set[str] = set()
        for _, target in _imports(path):
            while target and target not in names and "." in target:
                target = target.rsplit(".", 1)[0]  # `sidecar.repack.candidates.Candidate` -> the module
            if target in names and target != name:
                deps.add(target)
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):  # `from sidecar.repack import exact`: the module exact
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                deps |= {f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in names}
        graph[name] = deps
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for d in sorted(graph[n]):
            if state.get(d) == 1:
                found.append([*stack[stack.index(d) :], d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    return found


def test_no_import_circles_between_modules() -> None:
    """Two modules that import each other are one concept in two files, or share something that
    belongs below both (issue 26 item 5: ``Move``/``PlanResult`` in ``repack/result.py``; the
    domain rules take the predicates' parts, not the Predicates)."""
    assert _cycles() == []


def test_each_kernel_is_loaded_in_one_module() -> None:
    """A compiled kernel has one binding module (``mirror/kernels``, ``repack/ranking``,
    ``repack/receivers``, ``snapshot/ledger``); the others ask it whether it is in use (issue 26
    item 1: two switches for one fact disagree sooner or later)."""
    loaders: dict[str, list[str]] = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "load"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "dispatch"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                loaders.setdefault(str(node.args[0].value), []).append(str(path.relative_to(ROOT.parent)))
    assert loaders, "no kernel loads found: the check reads nothing"
    assert {k: v for k, v in loaders.items() if len(v) > 1} == {}


def test_one_obj_alias() -> None:
    """``Obj`` (a Kubernetes object as JSON) is defined once, in ``sidecar/kubeobj.py``."""
    defined = [
        str(path.relative_to(ROOT.parent))
        for path in _modules()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        and any(
            isinstance(t, ast.Name) and t.id == "Obj" for t in getattr(node, "targets", [getattr(node, "target", None)])
        )
    ]
    assert defined == ["sidecar/kubeobj.py"]


TESTS = ROOT.parent / "tests"
#: test folders that name no package of sidecar/: the real control plane, the Go edge, the repository
TEST_FOLDERS_BEYOND_THE_CODE = {"realcluster", "go", "project"}


def test_tests_are_laid_out_like_the_code() -> None:
    """Each test module sits in the folder of the package it tests (tests/<package>/), none at the top."""
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    folders = {p.name for p in TESTS.iterdir() if (p / "__init__.py").exists()}
    assert folders - packages <= TEST_FOLDERS_BEYOND_THE_CODE, folders - packages
    assert all(any(p.glob("test_*.py")) for p in TESTS.iterdir() if p.name in folders)


def _fixtures(tree: ast.Module) -> set[str]:
    """Names of the module-level functions decorated with ``pytest.fixture`` (called or not)."""
    out = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                if isinstance(target, ast.Attribute) and target.attr == "fixture":
                    out.add(node.name)
    return out


def test_fixtures_come_from_conftest_never_from_an_import() -> None:
    """A fixture imported by name into a test module shadows the conftest's fixture of the same
    name without saying so; shared fixtures live in a conftest.py, where pytest finds them."""
    trees = {p: ast.parse(p.read_text()) for p in TESTS.rglob("*.py")}
    shared = {
        ".".join(p.relative_to(TESTS.parent).with_suffix("").parts): _fixtures(tree)
        for p, tree in trees.items()
        if p.name != "conftest.py"
    }
    found = []
    for p, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in shared:
                found += [f"{p.relative_to(TESTS)}: {a.name}" for a in node.names if a.name in shared[node.module]]
    assert found == []
