"""Which device a run uses."""
from __future__ import annotations

from ..errors import WorkbenchError


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' when torch sees a GPU, else 'cpu'; checks that a CUDA device exists.

    Example:
        >>> resolve_device("cpu")
        'cpu'
    """
    import torch

    if not isinstance(device, str):
        raise WorkbenchError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {device!r}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return device
    if device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit()):
        if not torch.cuda.is_available():
            raise WorkbenchError(f"device {device!r} asked for, but torch sees no GPU here; use device='cpu' "
                                 "or device='auto'")
        return device
    raise WorkbenchError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {device!r}")
