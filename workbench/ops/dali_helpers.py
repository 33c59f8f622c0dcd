"""Small builders shared by the DALI lowerings: every value goes through `call`/`literal`."""
from __future__ import annotations

from ..literals import Name, call, identifier

INTERP = {"bilinear": Name("types.INTERP_LINEAR"), "nearest": Name("types.INTERP_NN"),
          "bicubic": Name("types.INTERP_CUBIC")}


class RandomOp:
    """A `fn.random.*` call whose seed the emitter writes in: every random operator of an
    export is seeded explicitly, so any stretch of the chain can run in a pipeline of its own
    and still draw the same values (the app's preview resumes from the edited step)."""

    def __init__(self, func: str, kwargs: dict):
        self.func, self.kwargs = func, kwargs

    def source(self, seed) -> str:
        return call(self.func, {**self.kwargs, "seed": seed})


def uniform(lo: float, hi: float) -> RandomOp:
    """A per-sample uniform draw in [lo, hi] (DALI refuses an empty range, so a collapsed
    one becomes a one-value set: still a per-sample node that can be reported)."""
    if lo == hi:
        return RandomOp("fn.random.uniform", {"values": [float(lo)]})
    return RandomOp("fn.random.uniform", {"range": (float(lo), float(hi))})


def assign(target, func: str, args: dict) -> str:
    """`target = func(target, **args)` with checked names and literal values."""
    return f"{identifier(str(target))} = {call(func, {'__input__': Name(str(target)), **args})}"
