"""Copy top-level functions and classes of the workbench's own modules into an exported file,
with what they call: read with `ast`, never imported, so that exporting needs none of the
libraries those modules use (torch, Kornia).

Example:
    >>> from workbench.runtime import rows
    >>> defs = definitions((rows.__file__,))
    >>> [name for _, _, name, _ in with_dependencies(defs, ["sample_rows"])]
    ['sample_rows', '_rows', '_undrawn', '_to_python']
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

from ..errors import ExportError


@functools.cache
def definitions(paths: tuple[str, ...]) -> dict[str, tuple[str, int, str]]:
    """name -> (file, line, source) of every top-level class and function of the module files
    `paths`. (Decorators are not copied: the modules copied have none.)"""
    defs: dict[str, tuple[str, int, str]] = {}
    for path in map(Path, paths):
        text = path.read_text(encoding="utf-8")
        for node in ast.parse(text).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                if node.name in defs:
                    raise ExportError(f"{node.name} is defined twice in {', '.join(Path(p).name for p in paths)}")
                defs[node.name] = (path.name, node.lineno, ast.get_source_segment(text, node))
    return defs


@functools.lru_cache(maxsize=None)
def _names_used(source: str) -> frozenset[str]:
    # The definitions are the workbench's own source: the same few hundred strings every export.
    return frozenset(n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name))


def with_dependencies(defs: dict[str, tuple[str, int, str]], names) -> list[tuple[str, int, str, str]]:
    """(file, line, name, source) of the definitions `names` of `defs` and of every definition
    there that they use, transitively, in file and line order."""
    wanted: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        if name not in defs:
            raise ExportError(f"{name!r} is not defined in the modules copied into the export")
        wanted.add(name)
        todo += [used for used in _names_used(defs[name][2]) if used in defs and used not in wanted]
    return sorted((defs[name][0], defs[name][1], name, defs[name][2]) for name in wanted)
