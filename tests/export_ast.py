"""Reading an export's syntax a top-level block at a time, each distinct block parsed once.

An export is thousands of lines, nearly all the same in every export (the runtime), and the tests
that read hundreds of exports (test_safety, test_export_dali) spent most of their time parsing
the same text again. Each block (cut as the workbench compiles them, codegen/compiler.py) is
parsed once; a tree is the blocks' statements in order, shared between trees: read it, never
change it. Line numbers count from each block's start.
"""
from __future__ import annotations

import ast
import functools

from workbench.codegen.compiler import split_blocks


@functools.lru_cache(maxsize=8192)
def block_body(text: str) -> tuple[ast.stmt, ...]:
    return tuple(ast.parse(text).body)


def blocks(src: str) -> list[str]:
    """`src` cut into top-level blocks that parse alone (or whole, where a cut splits a statement)."""
    texts = [text for _, text in split_blocks(src)]
    try:
        for text in texts:
            block_body(text)
    except SyntaxError:
        return [src]
    return texts


def parse_export(src: str) -> ast.Module:
    """The export's syntax tree, its top-level statements in order."""
    return ast.Module(body=[node for text in blocks(src) for node in block_body(text)], type_ignores=[])
