"""Backends run a chain on a batch of images and report what each sample drew.

`run_chain` (run.py) checks the chain and the images and hands them to one backend (kornia.py,
dali.py, albumentations.py), each of which runs the very module that export writes; the
preview caches (kornia_cache.py, dali_cache.py) resume a run from the first edited step.

Example:
    >>> import workbench as wb
    >>> res = wb.Chain(seed=2).add("HorizontalFlip", p=1.0).run(wb.load_images()[:1])
    >>> res.params[0][0]["applied"]
    True
"""
from .device import resolve_device
from .inputs import check_sizes, soft_targets
from .memory import check_memory
from .result import BACKENDS, RunResult
from .run import check_compile_backend, check_device_support, run_chain

__all__ = ["BACKENDS", "RunResult", "check_compile_backend", "check_device_support", "check_memory", "check_sizes",
           "resolve_device", "run_chain", "soft_targets"]
