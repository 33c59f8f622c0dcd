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
             comment("seed derivation, --save's records, the --bench timer and the command-line flags every "
                     "export takes."),
             f"IMAGE_EXTENSIONS = {literal(runtime.IMAGE_EXTENSIONS)}", "", ""]
    for func in (runtime.list_image_files, runtime.decode_image, runtime.distributed_context,
                 runtime.derive_seed, runtime.bench_batches, runtime.record_arrays, runtime.median,
                 runtime.timed_rates, runtime.contract_parser):
        parts += [inspect.getsource(func), ""]
    return "\n".join(parts).rstrip() + "\n"


@functools.cache
def shard_source() -> str:
    """Source of the WebDataset shard helpers (runtime/common.py) that the Kornia and DALI
    training loaders embed beside runtime_source's: --shards patterns, the tar index, reading
    a member. (The Albumentations export reads folders only.)"""
    parts = [comment("WebDataset tar shards (shards=, --shards), shared with the workbench: the patterns, the samples"),
             comment("of a tar (members grouped by key, as fn.readers.webdataset groups them) and reading a member."),
             f"CLASS_ID_DIGITS = {literal(runtime.CLASS_ID_DIGITS)}",
             f"SHARDS_EXAMPLE = {literal(runtime.SHARDS_EXAMPLE)}", "", ""]
    for func in (runtime.split_outside_braces, runtime.expand_braces, runtime.glob_paths, runtime.shard_paths,
                 runtime.check_shards_argument, runtime.class_id, runtime.shard_samples, runtime.index_shards,
                 runtime.read_member, runtime.decode_shard_images, runtime.save_inputs):
        parts += [inspect.getsource(func), ""]
    return "\n".join(parts).rstrip() + "\n"
