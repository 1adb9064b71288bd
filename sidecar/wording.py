"""How numbers read in every message a person sees (conditions, explanations, tables, the demo):
one format, written once. The guide's own example is the model: ``33.3% -> 0%``, ``moved 2``."""

from __future__ import annotations


def number(x: float) -> str:
    """2 not 2.0, 2.5 as it is, at most six significant digits (Go's %g, kubectl's way)."""
    return f"{x:g}"


def percent(x: float) -> str:
    """A rate to one decimal, trailing zeros dropped: 33.3%, 0%, 100%."""
    return f"{round(x, 1):g}%"


def change(before: float, after: float) -> str:
    """A rate before and after: ``33.3% -> 0%``."""
    return f"{percent(before)} -> {percent(after)}"


def count(n: float, noun: str, plural: str | None = None) -> str:
    """``1 PodGroup``, ``2 PodGroups``, ``1 card``, ``2.5 cards``: the noun agrees with the number."""
    return f"{number(n)} {noun if n == 1 else (plural or noun + 's')}"
