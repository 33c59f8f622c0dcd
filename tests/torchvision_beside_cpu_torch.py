"""Let a torchvision wheel built for a CUDA torch import beside the CPU torch the tests pin.

PyPI's torchvision wheels carry C++ operators (nms, roi_align, the image decoders) compiled against a
CUDA build of torch; beside the CPU torch 2.13.0 that scripts/bootstrap.sh installs, that library
does not load, and `import torchvision` then stops where torchvision registers a fake kernel for
`torchvision::nms`, an operator that never got defined. The `transforms.v2` classes the importer
tests compare against are plain Python on torch tensors and need none of those operators, so the
tests let that one kind of registration pass. Only for tests (and the import benchmark): users who
install a torchvision that matches their torch need nothing of this.

Example:
    >>> tolerate_missing_torchvision_kernels()
    >>> tolerate_missing_torchvision_kernels()  # once is enough; again changes nothing
"""
from __future__ import annotations

import functools

import torch.library

_ORIGINAL = torch.library.register_fake


def _registers_missing_torchvision_op(op) -> bool:
    name = op if isinstance(op, str) else getattr(op, "_name", "")
    if not name.startswith("torchvision::"):
        return False
    try:
        torch._C._dispatch_find_schema_or_throw(name, "")
    except RuntimeError:
        return True
    return False


@functools.wraps(_ORIGINAL)
def _tolerant_register_fake(op, func=None, /, **kwargs):
    if _registers_missing_torchvision_op(op):
        # No operator to attach the fake kernel to: hand the function back unregistered.
        return func if func is not None else (lambda f: f)
    return _ORIGINAL(op, func, **kwargs) if func is not None else _ORIGINAL(op, **kwargs)


def tolerate_missing_torchvision_kernels() -> None:
    """Make `torch.library.register_fake` skip torchvision operators that did not load (see the
    module's docstring); every other registration goes through unchanged."""
    torch.library.register_fake = _tolerant_register_fake
