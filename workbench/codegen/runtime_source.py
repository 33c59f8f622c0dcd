"""Source text of the shared decoding functions, as embedded in every exported script."""
from __future__ import annotations

import functools
import inspect

from ..runtime import common as runtime
from ..literals import comment, literal


@functools.cache
def runtime_source() -> str:
    """The shared functions' source (read once: inspect is slow)."""
    parts = [comment("Shared with the workbench: decoding as its preview does it, the torchrun context,"),
             comment("seed derivation, --save's records, the --bench timer and the command-line flags every export takes."),
             f"IMAGE_EXTENSIONS = {literal(runtime.IMAGE_EXTENSIONS)}", "", ""]
    for func in (runtime.list_image_files, runtime.decode_image, runtime.distributed_context,
                 runtime.derive_seed, runtime.bench_batches, runtime.record_arrays, runtime.median,
                 runtime.timed_rates, runtime.contract_parser):
        parts += [inspect.getsource(func), ""]
    return "\n".join(parts).rstrip() + "\n"
