"""The subset of CEL that ``x-kubernetes-validations`` rules may use in the sandbox.

No CEL engine is installed, and guessing at a rule would accept objects a real API server refuses,
so a rule outside this grammar is refused when the CRD is registered (``ValueError``):

    expr    := and ('||' and)*
    and     := unary ('&&' unary)*
    unary   := '!' unary | operand (('==' | '!=' | '<' | '<=' | '>' | '>=') operand)?
    operand := '(' expr ')' | 'has(' path ')' | 'size(' path ')' | call | path | literal
    call    := path '.' ('all' | 'exists') '(' ident ',' expr ')'
             | path '.' ('startsWith' | 'endsWith' | 'contains' | 'matches') '(' expr ')'
    path    := ('self' | 'oldSelf' | ident bound by an enclosing macro) ('.' ident | '[' int ']' | '[' string ']')*
    literal := int | float | 'string' | "string" | true | false | null

``==`` is deep equality (so ``self == oldSelf`` is the immutability rule); ordering needs two numbers
or two strings. ``all``/``exists`` range over a list's elements or a map's keys. ``&&`` and ``||``
are commutative as in CEL: an error on one side is absorbed when the other side decides
(``false && error`` is false), and so are errors of single elements in ``all``/``exists``. A rule
that mentions ``oldSelf`` is a transition rule: the API server evaluates it only on update and only
where the old object has a value (apiextensions-apiserver pkg/apiserver/schema/cel/validation.go).
Evaluation errors (a missing key, a type mismatch) are returned as messages, as the API server
reports them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<num>-?\d+\.\d+(?:[eE][+-]?\d+)?|-?\d+)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<op>==|!=|<=|>=|&&|\|\||[<>!().,\[\]])
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  )""",
    re.VERBOSE,
)
_ORDER = {"<", "<=", ">", ">="}
_MACROS = ("all", "exists")
_STRING_FUNCTIONS = ("startsWith", "endsWith", "contains", "matches")
_ROOTS = ("self", "oldSelf")
_MISSING = object()


class EvalError(Exception):
    """A runtime error of a rule (reported as a failed validation, like the API server does)."""


@dataclass(frozen=True)
class _Path:
    root: str  # "self", "oldSelf" or a macro's variable
    steps: tuple[str | int, ...]


@dataclass(frozen=True)
class _Lit:
    value: Any


@dataclass(frozen=True)
class _Call:
    fn: str  # "has" or "size"
    path: _Path


@dataclass(frozen=True)
class _Method:
    fn: str  # a macro (all, exists: ``var`` bound in ``arg``) or a string function (``arg`` its argument)
    target: _Path
    var: str
    arg: Any


@dataclass(frozen=True)
class _Op:
    op: str
    args: tuple[Any, ...]


def _tokenize(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"unsupported CEL at {text[pos:]!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokenize(text)
        self.i = 0
        self.bound: list[str] = []  # variables of the enclosing macros

    def peek(self) -> str:
        return self.toks[self.i][1] if self.i < len(self.toks) else ""

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.toks):
            raise ValueError("unexpected end of rule")
        tok = self.toks[self.i]
        if want is not None and tok[1] != want:
            raise ValueError(f"expected {want!r}, got {tok[1]!r}")
        self.i += 1
        return tok

    def parse(self) -> Any:
        node = self.expr()
        if self.i != len(self.toks):
            raise ValueError(f"unsupported CEL at {self.peek()!r}")
        return node

    def expr(self) -> Any:
        node = self.conj()
        while self.peek() == "||":
            self.take()
            node = _Op("||", (node, self.conj()))
        return node

    def conj(self) -> Any:
        node = self.unary()
        while self.peek() == "&&":
            self.take()
            node = _Op("&&", (node, self.unary()))
        return node

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            return _Op("!", (self.unary(),))
        left = self.operand()
        if self.peek() in ("==", "!=", *_ORDER):
            op = self.take()[1]
            return _Op(op, (left, self.operand()))
        return left

    def operand(self) -> Any:
        kind, tok = self.take()
        if tok == "(":
            node = self.expr()
            self.take(")")
            return node
        if kind == "num":
            return _Lit(float(tok) if "." in tok or "e" in tok.lower() else int(tok))
        if kind == "str":
            return _Lit(bytes(tok[1:-1], "utf-8").decode("unicode_escape"))
        if tok in ("true", "false", "null"):
            return _Lit({"true": True, "false": False, "null": None}[tok])
        if tok in ("has", "size") and self.peek() == "(":
            self.take("(")
            path = self.path(self.take()[1])
            self.take(")")
            if not isinstance(path, _Path):
                raise ValueError(f"{tok}() takes a field selection")
            if tok == "has" and not path.steps:
                raise ValueError("has() needs a field selection")
            return _Call(tok, path)
        return self.path(tok)

    def path(self, root: str) -> _Path | _Method:
        if root not in _ROOTS and root not in self.bound:
            raise ValueError(f"unsupported identifier {root!r} (only self, oldSelf and macro variables)")
        steps: list[str | int] = []
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                kind, name = self.take()
                if kind != "id":
                    raise ValueError(f"expected a field name, got {name!r}")
                if self.peek() == "(":
                    return self.method(name, _Path(root, tuple(steps)))
                steps.append(name)
            else:
                kind, key = self.take()
                self.take("]")
                if kind == "num" and "." not in key:
                    steps.append(int(key))
                elif kind == "str":
                    steps.append(key[1:-1])
                else:
                    raise ValueError(f"unsupported index {key!r}")
        return _Path(root, tuple(steps))

    def method(self, name: str, target: _Path) -> _Method:
        """``target.name(...)``: a macro binding a variable, or a string function (nothing may follow)."""
        self.take("(")
        if name in _MACROS:
            kind, var = self.take()
            if kind != "id" or var in (*_ROOTS, *self.bound, "has", "size", "true", "false", "null"):
                raise ValueError(f"{name}() needs a new variable name first, got {var!r}")
            self.take(",")
            self.bound.append(var)
            body = self.expr()
            self.bound.pop()
            self.take(")")
            return _Method(name, target, var, body)
        if name in _STRING_FUNCTIONS:
            arg = self.expr()
            self.take(")")
            return _Method(name, target, "", arg)
        raise ValueError(f"unsupported function or macro {name!r}")


def _mentions_old(node: Any) -> bool:
    if isinstance(node, _Path):
        return node.root == "oldSelf"
    if isinstance(node, _Call):
        return node.path.root == "oldSelf"
    if isinstance(node, _Method):
        return node.target.root == "oldSelf" or _mentions_old(node.arg)
    if isinstance(node, _Op):
        return any(_mentions_old(a) for a in node.args)
    return False


class Rule:
    """One compiled rule; ``evaluate`` answers None when it holds, else why not."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._tree = _Parser(text).parse()
        self.transition = _mentions_old(self._tree)

    def evaluate(self, self_value: Any, old_value: Any = _MISSING) -> str | None:
        """None if the rule holds; otherwise a message (a failed rule or an evaluation error)."""
        try:
            result = self._eval(self._tree, {"self": self_value, "oldSelf": old_value})
        except EvalError as exc:
            return str(exc)
        if not isinstance(result, bool):
            return f"rule did not evaluate to a bool: {result!r}"
        return None if result else ""

    @staticmethod
    def _resolve(path: _Path, env: dict[str, Any]) -> Any:
        value = env.get(path.root, _MISSING)
        if value is _MISSING:
            raise EvalError(f"no such key: {path.root}")
        for step in path.steps:
            if isinstance(step, int):
                if not isinstance(value, list) or not 0 <= step < len(value):
                    raise EvalError(f"index out of bounds: {step}")
                value = value[step]
            elif isinstance(value, dict) and step in value:
                value = value[step]
            else:
                raise EvalError(f"no such key: {step}")
        return value

    def _eval(self, node: Any, env: dict[str, Any]) -> Any:
        if isinstance(node, _Lit):
            return node.value
        if isinstance(node, _Path):
            return self._resolve(node, env)
        if isinstance(node, _Call):
            if node.fn == "has":
                parent = self._resolve(_Path(node.path.root, node.path.steps[:-1]), env)
                last = node.path.steps[-1]
                return isinstance(parent, dict) and last in parent
            value = self._resolve(node.path, env)
            if not isinstance(value, (str, list, dict)):
                raise EvalError("no such overload: size")
            return len(value)
        if isinstance(node, _Method):
            return self._method(node, env)
        assert isinstance(node, _Op)
        if node.op == "!":
            return not self._bool(self._eval(node.args[0], env))
        if node.op in ("&&", "||"):
            return self._logic(node.op == "||", [lambda arg=arg: self._eval(arg, env) for arg in node.args])
        a, b = (self._eval(arg, env) for arg in node.args)
        if node.op == "==":
            return equal(a, b)
        if node.op == "!=":
            return not equal(a, b)
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
        if not numbers and not (isinstance(a, str) and isinstance(b, str)):
            raise EvalError(f"no such overload: {type(a).__name__} {node.op} {type(b).__name__}")
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[node.op]

    def _method(self, node: _Method, env: dict[str, Any]) -> bool:
        target = self._resolve(node.target, env)
        if node.fn in _MACROS:
            if not isinstance(target, (list, dict)):
                raise EvalError(f"no such overload: {node.fn}")
            bodies = [lambda item=item: self._eval(node.arg, {**env, node.var: item}) for item in target]
            return self._logic(node.fn == "exists", bodies)
        arg = self._eval(node.arg, env)
        if not isinstance(target, str) or not isinstance(arg, str):
            raise EvalError(f"no such overload: {node.fn}")
        if node.fn == "startsWith":
            return target.startswith(arg)
        if node.fn == "matches":  # RE2's partial match; the rules here anchor with ^...$
            try:
                return re.search(arg, target) is not None
            except re.error as exc:
                raise EvalError(f"invalid regular expression {arg!r}: {exc}") from None
        return target.endswith(arg) if node.fn == "endsWith" else arg in target

    def _logic(self, absorbing: bool, terms: list[Any]) -> bool:
        """CEL's commutative ``||`` (absorbing True) / ``&&`` (absorbing False) over lazily evaluated
        terms: the absorbing value wins over errors, else the first error is raised."""
        error: EvalError | None = None
        for term in terms:
            try:
                value = self._bool(term())
            except EvalError as exc:
                error = error or exc
                continue
            if value is absorbing:
                return absorbing
        if error is not None:
            raise error
        return not absorbing

    @staticmethod
    def _bool(value: Any) -> bool:
        if not isinstance(value, bool):
            raise EvalError("no such overload: a non-bool in a logical operator")
        return value


def equal(a: Any, b: Any) -> bool:
    """CEL heterogeneous equality: numbers compare by value, bools are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and bool(a == b)


MISSING: Any = _MISSING
