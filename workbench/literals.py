"""Safe pieces of generated source: literals, identifiers and comments.

Generated code is built only from these helpers: values are validated plain data rendered
with `repr`, names must be identifiers, comments cannot break out of their line.
"""
from __future__ import annotations

import keyword
import math
from typing import Any

from .errors import ExportError


class Name(str):
    """A variable or expression of generated code (not user data), written as it is.

    Only emitters create these, from identifiers and fixed text; user values never are.
    """


def literal(value: Any) -> str:
    """Source text for a plain, finite value (None, bool, int, float, str, list/tuple/dict of those).

    Example:
        >>> literal((0.5, 1.0)), literal("BILINEAR")
        ('(0.5, 1.0)', "'BILINEAR'")
    """
    if isinstance(value, Name):
        return str.__str__(value)
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ExportError(f"cannot write the non-finite number {value!r} into code")
        return repr(float(value))
    if isinstance(value, str):
        return repr(str.__str__(value))  # the real characters, whatever a subclass's __str__ says
    if isinstance(value, tuple):
        inner = ", ".join(literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):  # keys go through literal too: only plain strings and numbers pass
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    raise ExportError(f"cannot write a value of type {type(value).__name__} into code")


def identifier(name: str) -> str:
    """`name` if it is a plain Python identifier (not a keyword), else ExportError.

    Example:
        >>> identifier("RandomRotation")
        'RandomRotation'
    """
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ExportError(f"{name!r} is not a safe Python name")
    return name


def comment(text: str) -> str:
    """A one-line `# ...` comment; control characters (newlines included) become spaces.

    Example:
        >>> comment("step 1\\nimport os")
        '# step 1 import os'
    """
    clean = "".join(ch if ch.isprintable() else " " for ch in str(text))
    return "# " + clean


def call(func: str, kwargs: dict[str, Any]) -> str:
    """`func(k=literal, ...)` with every keyword checked (key "__input__": a positional first argument).

    Example:
        >>> call("K.RandomRotation", {"degrees": (-10.0, 10.0), "p": 0.5})
        'K.RandomRotation(degrees=(-10.0, 10.0), p=0.5)'
    """
    parts = [literal(v) if k == "__input__" else f"{identifier(k)}={literal(v)}" for k, v in kwargs.items()]
    dotted = ".".join(identifier(piece) for piece in func.split("."))
    return f"{dotted}({', '.join(parts)})"


def group_options(step) -> str:
    """The keyword arguments of an exported StepGroup for a group step: p, and the weights
    and n of its enabled children.

    Example:
        >>> from workbench.model import Step
        >>> group_options(Step.create("SomeOf", n=2, p=0.5, steps=[Step.create("Invert"), Step.create("Rotate")]))
        'p=0.5, n=2'
    """
    options = {"p": float(step.p)}
    if step.params.get("weights"):
        options["weights"] = [w for w, child in zip(step.params["weights"], step.steps) if child.enabled]
    if "n" in step.params:
        options["n"] = min(step.params["n"], len(step.enabled_steps()))
    return ", ".join(f"{key}={literal(value)}" for key, value in options.items())
