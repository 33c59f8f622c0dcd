r"""Compiling generated source a top-level block at a time, each block compiled once.

A generated module is thousands of lines, nearly all of them the same for every chain (the
runtime, the loader, the fusion code); the chain's own part is a few dozen lines. A live preview
emits and runs a new module on every parameter change, and compiling the whole of it took about
50 ms. So the source is cut into top-level blocks (at a blank line followed by a line that starts
a statement), and each block is compiled once and kept: a module is its blocks' code objects,
executed in order into one namespace, which does what the whole module does.

A kept block keeps its code objects: a function whose text did not change between two modules is
the same code, wherever the module has it, so what is cached by code is reused too. DALI's
autograph turns each pipeline function with an `if` into graph code, tens of milliseconds a
function and 0.8 s for the runtime's pipeline functions on the 2-core machine; a chain with a step
more or a step less moves every line below it, and code compiled at the module's own line numbers
was converted again for each such chain. So a block is compiled as a file of its own, named by its
text's hash and registered with linecache: tracebacks and `inspect.getsource` show the generated
code, at its line within the block. Where a cut would split a statement (a string or a bracket
spanning it), the whole source is compiled as one block.

Example:
    >>> codes = compile_source("x = 1\n\n\ndef f():\n    return x + 1\n", "<example>")
    >>> namespace = {}
    >>> for code in codes: exec(code, namespace)
    >>> namespace["f"](), namespace["f"].__code__.co_firstlineno  # line 1 of its block
    (2, 1)
    >>> codes[1] is compile_source("y = 2\n\n\n\ndef f():\n    return x + 1\n", "<other>")[1]  # kept
    True
"""
from __future__ import annotations

import hashlib
import linecache
import re
import types
from collections import OrderedDict

MAX_BLOCKS = 4096
# Lines that start a top-level statement: definitions, imports, assignments, compound statements;
# and the emitters' section banners ("# ---- From the workbench's ... ----"), so that the first
# definition of a section is not one block with the chain's changing lines above it. (A docstring's
# paragraph does not; a cut inside a string or brackets would fail to compile anyway.)
_STATEMENT = re.compile(r"(?:async def |def |class |@|import |from |if |for |while |with |try:|# ---- |"
                        r"[A-Za-z_][A-Za-z0-9_]* *(?:=|\+=))")
_BLOCKS: OrderedDict[str, types.CodeType] = OrderedDict()
_SOURCES: OrderedDict[str, list[types.CodeType]] = OrderedDict()


def split_blocks(source: str) -> list[tuple[int, str]]:
    """(first line number, text) of each top-level block of `source`.

    Example:
        >>> [line for line, _ in split_blocks("a = 1\\n\\nb = 2\\n    # c\\n\\n\\ndef f():\\n    pass\\n")]
        [1, 3, 7]
    """
    cuts, at = [0], source.find("\n\n")
    while at >= 0:  # blank lines (emitters write them empty), each then tried as a cut
        if _STATEMENT.match(source, at + 2):
            cuts.append(at + 2)
        at = source.find("\n\n", at + 1)
    blocks, line = [], 1
    for start, end in zip(cuts, cuts[1:] + [len(source)]):
        text = source[start:end]
        blocks.append((line, text))
        line += text.count("\n")
    return blocks


def compile_source(source: str, filename: str) -> list[types.CodeType]:
    """Code objects that, executed in order in one namespace, run `source` as a module (`filename`
    names it when it is compiled whole). Raises SyntaxError (with the module's line numbers) when
    the source does not compile."""
    codes = _SOURCES.get(source)
    if codes is None:
        try:
            codes = [_block(text) for _, text in split_blocks(source)]
        except SyntaxError:
            # A cut inside a multi-line statement, or a real error: the whole source decides (and
            # a real error is then reported at its line in the module).
            return [compile(source, filename, "exec", dont_inherit=True)]
        _SOURCES[source] = codes  # the emitter checks a source, then load_module runs it: split once
        while len(_SOURCES) > 16:
            _SOURCES.popitem(last=False)
    return codes


def _block(text: str) -> types.CodeType:
    """`text`'s code, as a file of its own (kept, and registered with linecache)."""
    code = _BLOCKS.get(text)
    if code is None:
        name = f"<workbench-block-{hashlib.sha256(text.encode()).hexdigest()[:12]}>"
        linecache.cache[name] = (len(text), None, text.splitlines(True), name)
        code = compile(text, name, "exec", dont_inherit=True)
        _BLOCKS[text] = code
        while len(_BLOCKS) > MAX_BLOCKS:
            _, old = _BLOCKS.popitem(last=False)
            linecache.cache.pop(old.co_filename, None)
    else:
        _BLOCKS.move_to_end(text)
    return code
