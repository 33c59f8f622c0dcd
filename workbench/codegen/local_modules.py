"""Copy the workbench's own Kornia modules (`kornia_modules/`) into an exported file.

Read with `ast`, never imported, so that exporting needs neither torch nor Kornia.

Example:
    >>> local_module_source([]) == ""
    True
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

from ..errors import ExportError

MODULES_DIR = Path(__file__).parent.parent / "runtime" / "kornia_modules"


@functools.cache
def _definitions() -> dict[str, tuple[str, int, str]]:
    """name -> (file, line, source) of every top-level class and function of kornia_modules/.
    (Decorators are not copied: the modules have none.)"""
    defs: dict[str, tuple[str, int, str]] = {}
    for path in sorted(MODULES_DIR.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.parse(text).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                if node.name in defs:
                    raise ExportError(f"{node.name} is defined twice in {MODULES_DIR.name}/")
                defs[node.name] = (path.name, node.lineno, ast.get_source_segment(text, node))
    return defs


def _names_used(source: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}


def local_module_source(names) -> str:
    """Source of the classes `names` of kornia_modules/ and of every top-level definition there
    that they use (transitively), in file and line order."""
    defs = _definitions()
    wanted: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        if name not in defs:
            raise ExportError(f"the workbench's Kornia module {name!r} is not defined in {MODULES_DIR.name}/")
        wanted.add(name)
        todo += [used for used in _names_used(defs[name][2]) if used in defs and used not in wanted]
    ordered = sorted(defs[name] for name in wanted)
    return "\n\n\n".join(source for _, _, source in ordered)
