"""Copy the workbench's own Kornia modules (`kornia_modules/`) into an exported file.

Read with `ast`, never imported (see source_copy), so that exporting needs neither torch nor Kornia.

Example:
    >>> local_module_source([]) == ""
    True
"""
from __future__ import annotations

import functools
from pathlib import Path

from ..errors import ExportError
from .source_copy import definitions, with_dependencies

MODULES_DIR = Path(__file__).parent.parent / "runtime" / "kornia_modules"


def local_module_source(names) -> str:
    """Source of the classes `names` of kornia_modules/ and of every top-level definition there
    that they use (transitively), in file and line order."""
    return _local_module_source(tuple(names))


@functools.lru_cache(maxsize=64)
def _local_module_source(names: tuple[str, ...]) -> str:
    # The same few sets of names for every chain a preview emits: read and followed once each.
    defs = definitions(tuple(str(path) for path in sorted(MODULES_DIR.glob("*.py"))))
    missing = [name for name in names if name not in defs]
    if missing:
        raise ExportError(f"the workbench's Kornia module {missing[0]!r} is not defined in {MODULES_DIR.name}/")
    return "\n\n\n".join(source for *_, source in with_dependencies(defs, names))
