"""Code emitters: chain -> source text per backend, checked with `ast` before use.

Example:
    >>> import workbench as wb
    >>> src = export_chain(wb.Chain(seed=1).add("HorizontalFlip"), "kornia")
    >>> "K.RandomHorizontalFlip(p=0.5)" in src
    True
"""
from __future__ import annotations

import ast
import functools
import hashlib
import json
import linecache
import sys
import os
import types
from pathlib import Path

from ..errors import ChainError, ExportError, UnsupportedOpError
from ..model import ChainModel, validated_json
from ..ops import where_it_runs
from .albumentations import emit_albumentations
from .compiler import compile_source
from .dali import emit_dali
from .kornia import emit_kornia
from .options import ExportOptions, everything, export_options
from .snippets import FORMS, check_form, emit_snippet

__all__ = ["FORMS", "EMITTERS", "emit", "export_chain", "export_path", "load_module"]

EMITTERS = {"kornia": emit_kornia, "dali": emit_dali, "albumentations": emit_albumentations}


def emit(chain, backend: str, form: str = "program", options: ExportOptions | None = None) -> str:
    """Validated, syntax-checked source of `chain` for `backend`: the runnable program, or with
    `form="snippet"` the chain alone in the library's terms (codegen/snippets.py). A program
    carries the features of `options` (codegen/options.py); without them, every feature the
    backend has: the module the workbench itself loads to preview, run and estimate a chain."""
    if backend not in EMITTERS:
        raise ChainError(f"unknown backend {backend!r} for export; choose one of {', '.join(EMITTERS)}")
    check_form(form, backend)
    if options is None:
        options = everything(backend)
    chain_json = validated_json(chain)  # (a live preview emits the same chain per draw: validated once)
    unsupported = chain.unsupported_ops(backend)
    if unsupported:
        details = "; ".join(f"{op} {where_it_runs(op, backend)}" for op in unsupported)
        raise UnsupportedOpError(f"cannot export to {backend}: {details}")
    return _emit_checked(chain_json, backend, form, options)


@functools.lru_cache(maxsize=64)
def _emit_checked(chain_json: str, backend: str, form: str, options: ExportOptions) -> str:
    # Keyed by the validated chain's JSON: live previews re-run the same chain often. Compiled
    # here (a block at a time, see compiler.py): what does not compile never leaves the emitter,
    # and load_module then finds the code compiled.
    chain = ChainModel.from_dict(json.loads(chain_json))
    source = EMITTERS[backend](chain, options) if form == "program" else emit_snippet(chain, backend)
    try:
        compile_source(source, _filename(source, backend))
    except SyntaxError as exc:  # a bug in an emitter, never the user's fault
        raise ExportError(f"generated {backend} code does not parse (line {exc.lineno}): {exc.msg}") from None
    return source


@functools.lru_cache(maxsize=64)
def _filename(source: str, backend: str) -> str:
    # Cached: every run loads its module by this name, and hashing a program took 0.1 ms a run (a
    # str keeps its own hash, so the cache finds the very string _emit_checked handed out at once).
    return f"<workbench-{backend}-{hashlib.sha256(source.encode()).hexdigest()[:16]}>"


def export_path(path: str | os.PathLike, folder: str | os.PathLike | None = None, overwrite: bool = False) -> Path:
    """Where an export of `path` is written.

    Without `folder`, `path` is the caller's own choice (the Python API, the command line): it is
    taken as given, absolute or relative to the current folder, anywhere. With `folder`, `path`
    comes from untrusted input (the app's file box, a name found in a loaded file) and must
    resolve inside `folder`. Either way the file must end in .py, and an existing file is
    replaced only with `overwrite=True`.

    Example:
        >>> export_path("../escape.py", "/tmp/out")
        Traceback (most recent call last):
        ...
        workbench.errors.ExportError: refusing to write '../escape.py': it resolves outside the folder /tmp/out
        >>> str(export_path("/tmp/elsewhere/aug.py"))
        '/tmp/elsewhere/aug.py'
    """
    if folder is None:
        target = Path(path).expanduser().resolve()
    else:
        base = Path(folder).resolve()
        target = (base / Path(path)).resolve()
        if target != base and base not in target.parents:
            raise ExportError(f"refusing to write {str(path)!r}: it resolves outside the folder {base}")
    if target.suffix != ".py":
        raise ExportError(f"exported code is a Python file; give a path ending in .py, got {str(path)!r}")
    if target.is_dir():
        raise ExportError(f"refusing to write {str(path)!r}: {target} is a folder; give a file name ending in .py")
    if target.exists() and not overwrite:
        raise ExportError(f"refusing to replace {target}: it exists; pass overwrite=True (--overwrite on the "
                          "command line) to replace it, or choose another name")
    return target


def export_chain(chain, backend: str = "kornia", path=None, folder=None, overwrite: bool = False,
                 form: str = "program", targets: bool = False, shards: bool = False, gpu_decode: bool = False) -> str:
    """Source for `backend` (`form`: "program" or "snippet", see emit); with `path` also written (see
    `export_path` for where, and when an existing file is replaced), creating missing folders.
    A program carries masks, boxes and keypoints (`targets`), WebDataset shards (`shards`) and the
    Kornia loader's GPU decoding (`gpu_decode`) only when asked (see codegen/options.py); a snippet
    takes none of them. Returns the source."""
    asked = {"targets": targets, "shards": shards, "gpu_decode": gpu_decode}
    if form != "program" and any(asked.values()):
        raise ExportError(f"{', '.join(k for k, v in asked.items() if v)}: options of the program form; a snippet is "
                          "the chain alone (form='program' for a program that carries them)")
    source = emit(chain, backend, form, export_options(chain, backend, **asked))
    if path is not None:
        target = export_path(path, folder, overwrite=overwrite)
        ast.parse(source)  # the file written is what Python's own parser reads: checked whole once more
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source, encoding="utf-8")
    return source


_MODULES: dict[str, types.ModuleType] = {}


def _own_code(module: types.ModuleType) -> None:
    """Give the functions a Kornia program defines code objects of their own. Programs share the
    code of their identical blocks (compiled once, compiler.py; DALI's autograph reuses it), but
    torch.compile keeps what it compiled on a function's code object: a second chain compiled in the
    process ran the first's compiled code, whose helpers live in the first module's globals
    (NameError), and every compiled run after was eager."""
    for value in list(vars(module).values()):
        if isinstance(value, types.FunctionType) and value.__globals__ is vars(module):
            value.__code__ = value.__code__.replace()


def load_module(source: str, backend: str) -> types.ModuleType:
    """Execute generated source as a module (cached by content, compiled a block at a time: see
    compiler.py); its lines show in tracebacks."""
    filename = _filename(source, backend)
    key = filename[len(f"<workbench-{backend}-"):-1]
    if key not in _MODULES:
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        module = types.ModuleType(f"workbench_generated_{backend}_{key}")
        module.__file__ = filename
        for code in compile_source(source, filename):
            exec(code, module.__dict__)
        if backend == "kornia":
            _own_code(module)
        # Importable by its name: pickle finds a class by its module, and a DataLoader worker that
        # raises the program's BadImageError pickles the class to the main process (unregistered, the
        # worker's queue thread failed and the loader waited forever).
        sys.modules[module.__name__] = _MODULES[key] = module
    return _MODULES[key]
