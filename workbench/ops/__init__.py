"""The op registry: the single source of truth for UI, validation, serialisation and code.

Example:
    >>> from workbench.ops import list_ops, get_op
    >>> "Rotate" in list_ops() and get_op("Rotate").family
    'geometric'
"""
from __future__ import annotations

import difflib

from ..errors import ChainError, show
from . import (batch, color, color_adjust, degrade, detection, distortion, filters, geometric, normalize, occlusion,
               policies, policies_torchvision, weather)
from .groups import GROUPS, GroupSpec, why_not_in_group
from .spec import FAMILIES, KorniaLowering, OpSpec

REGISTRY: dict[str, OpSpec] = {}


def register(spec: OpSpec) -> OpSpec:
    """Add an op to the registry (names are unique)."""
    if spec.name in REGISTRY:
        raise ValueError(f"op {spec.name!r} is registered twice")
    REGISTRY[spec.name] = spec
    return spec


for _module in (geometric, detection, distortion, color, color_adjust, filters, degrade, weather, occlusion, policies,
                policies_torchvision, batch, normalize):
    for _spec in _module.OPS:
        register(_spec)


def list_ops(family: str | None = None, backend: str | None = None) -> list[str]:
    """Names of registered ops, in catalog order, optionally filtered by family or backend.

    Example:
        >>> list_ops(family="normalize")
        ['Normalize']
    """
    return [s.name for s in REGISTRY.values()
            if (family is None or s.family == family) and (backend is None or s.supports(backend))]


def get_op(name: str) -> OpSpec:
    """The spec of op `name`; a ChainError naming the close matches when it is unknown.

    Example:
        >>> get_op("HorizontalFlip").default_p
        0.5
    """
    if not isinstance(name, str) or name not in REGISTRY:
        close = difflib.get_close_matches(str(name), REGISTRY, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known ops: {', '.join(REGISTRY)}"
        raise ChainError(f"unknown op {show(name)}{hint}")
    return REGISTRY[name]


def get_spec(name: str) -> OpSpec:
    """The spec of a step's `op`: a group's (OneOf, SomeOf, Sequential) or an op's (see get_op).

    Example:
        >>> get_spec("OneOf").is_group, get_spec("Rotate").is_group
        (True, False)
    """
    if isinstance(name, str) and name in GROUPS:
        return GROUPS[name]
    return get_op(name)


def where_it_runs(name: str, backend: str, device: str | None = None) -> str:
    """Where op `name` runs instead of `backend` (on `device`, when given), with the spec's reason and
    the fix, for the messages of everything that refuses it (run, export, the preview, the estimate).

    Example:
        >>> where_it_runs("OpticalDistortion", "dali", "cpu").split(" (")[0]
        "runs on dali's GPU only"
    """
    spec = get_op(name)
    if backend in spec.gpu_only and spec.supports(backend) and not spec.supports(backend, device):
        others = [b for b in spec.backends if b != backend and spec.supports(b, device)]
        instead = f", or the {' or '.join(others)} backend" if others else ""
        return (f"runs on {backend}'s GPU only ({spec.gpu_only[backend]}): use device=\"cuda\" on a machine with an "
                f"NVIDIA GPU{instead}")
    reason = f" ({spec.unsupported[backend]})" if backend in spec.unsupported else ""
    return f"runs on {', '.join(spec.backends) or 'no backend'}{reason}"


__all__ = ["FAMILIES", "GROUPS", "GroupSpec", "KorniaLowering", "OpSpec", "REGISTRY", "get_op", "get_spec",
           "list_ops", "register", "where_it_runs", "why_not_in_group"]
