"""Small builders shared by the DALI lowerings: every value goes through `call`/`literal`."""
from __future__ import annotations

from ..codegen.literals import Name, call, identifier

INTERP = {"bilinear": Name("types.INTERP_LINEAR"), "nearest": Name("types.INTERP_NN")}


def uniform(lo: float, hi: float) -> str:
    """Source of a per-sample uniform draw in [lo, hi] (DALI refuses an empty range, so a
    collapsed one becomes a one-value set: still a per-sample node that can be reported)."""
    if lo == hi:
        return call("fn.random.uniform", {"values": [float(lo)]})
    return call("fn.random.uniform", {"range": (float(lo), float(hi))})


def assign(target, func: str, args: dict) -> str:
    """`target = func(target, **args)` with checked names and literal values."""
    return f"{identifier(str(target))} = {call(func, {'__input__': Name(str(target)), **args})}"
