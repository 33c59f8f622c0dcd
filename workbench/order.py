"""Where a step belongs in a chain: the default place for a new op, and the orders that work on
the wrong values (a colour op after Normalize sees normalized values, not pixels in [0, 1]).

Example:
    >>> from workbench.model import ChainModel
    >>> chain = ChainModel().add("Rotate").add("Normalize").add("MixUp")
    >>> insertion_point(chain.steps, "ColorJitter"), insertion_point(chain.steps, "CutMix")
    (1, 3)
    >>> order_warnings(chain.add("GaussianBlur").steps)
    ['step 4 (GaussianBlur) comes after Normalize (step 2): it expects pixel values ...; move it before step 2']
"""
from __future__ import annotations

from typing import Sequence

from .ops import get_spec

# Families whose ops compute on pixel values (colour, blur and noise amounts, fill values, policies'
# colour ops): after Normalize they work on the wrong scale. Geometric ops only move pixels, and
# batch mixing blends whatever values it is given.
PIXEL_VALUE_FAMILIES = ("color", "blur/noise", "weather", "occlusion", "policies")
# Steps that close a chain: new ops go before them unless the user says otherwise.
CLOSING_FAMILIES = ("normalize", "batch mixing")


def insertion_point(steps: Sequence, op: str) -> int:
    """Index at which a new `op` joins the top level of `steps` by default: before Normalize and
    batch mixing (a new Normalize before batch mixing), at the end when the chain has neither."""
    family = get_spec(op).family
    closing = ("batch mixing",) if family == "normalize" else () if family == "batch mixing" else CLOSING_FAMILIES
    for index, step in enumerate(steps):
        if step.spec.family in closing:
            return index
    return len(steps)


def order_warnings(steps: Sequence) -> list[str]:
    """One sentence per enabled step that computes on pixel values after an enabled Normalize (top
    level; a group counts by its children)."""
    warnings, normalize = [], None
    for index, step in enumerate(steps):
        if not step.enabled:
            continue
        if step.op == "Normalize":
            normalize = normalize or index + 1
            continue
        families = {child.spec.family for child in step.ops()} if step.is_group else {step.spec.family}
        if normalize and families & set(PIXEL_VALUE_FAMILIES):
            warnings.append(f"step {index + 1} ({step.op}) comes after Normalize (step {normalize}): it expects pixel "
                            f"values in [0, 1] and gets normalized ones; move it before step {normalize}")
    return warnings
