"""Source text of the shared decoding functions, as embedded in every exported script."""
from __future__ import annotations

import functools
import inspect

from . import runtime
from .literals import comment, literal


@functools.cache
def runtime_source() -> str:
    """The decoding functions' source (read once: inspect is slow)."""
    return "\n".join([comment("Image files and decoding: the same functions the workbench preview uses."),
                      f"IMAGE_EXTENSIONS = {literal(runtime.IMAGE_EXTENSIONS)}", "", "",
                      inspect.getsource(runtime.list_image_files), "",
                      inspect.getsource(runtime.decode_image)])
