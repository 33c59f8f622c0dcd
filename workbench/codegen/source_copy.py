"""The one way the workbench's own code gets into an exported file: top-level definitions of its
modules, copied as they stand with the comments above them and what they use, read with `ast`,
never imported, so that exporting needs none of the libraries those modules use (torch, Kornia,
DALI, Albumentations).

A program module (runtime/kornia_program.py, ...) is a real module: it imports the workbench
functions it uses (`from .common import decode_image`), and the names an export defines per
chain from the module that stands for the empty chain (`from .kornia_chain import SEED`).
`program_source` copies its docstring, its imports, its `if __name__ == "__main__":` lines and the
definitions those use (its own and those of the modules it imports), leaving the chain module's
names to the export's chain section. A feature the export is made without (export options) is
code no copied definition reaches: the export binds its entry points to stand-ins (`defined`).

Example:
    >>> from workbench.runtime import rows
    >>> defs = definitions((rows.__file__,))
    >>> [d.name for d in with_dependencies(defs, ["sample_rows"])]
    ['sample_rows', '_rows', '_Columns', '_column', '_undrawn', '_to_python']
"""
from __future__ import annotations

import ast
import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import ExportError


@dataclass(frozen=True)
class Definition:
    """One top-level class, function or constant of a module: its source lines, with its
    decorators and the comment lines right above it. `rank` orders modules (see program_source)."""
    rank: int
    line: int
    name: str
    source: str
    path: str


@dataclass(frozen=True)
class Module:
    """What program_source needs of one module file."""
    path: Path
    docstring: str | None
    prelude: tuple[tuple[str, frozenset[str]], ...]  # (text, names bound) of its absolute imports and the
    # statements among them (which bind none), in order
    imports: tuple[tuple[Path, tuple[str, ...]], ...]  # (module file, names) of its relative imports
    main: str | None  # the source of its `if __name__ == "__main__":` block


def _lines_of(node: ast.stmt, lines: list[str]) -> str:
    """Whole source lines of a top-level statement, its decorators and the comments right above it."""
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    while first > 1 and lines[first - 2].startswith("#"):
        first -= 1
    return "\n".join(lines[first - 1:node.end_lineno])


def _assigned(node: ast.stmt) -> list[str]:
    """The names a top-level constant definition binds ([] for other statements)."""
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
        return [t.id for t in node.targets]
    return []


def _is_main_block(node: ast.stmt) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


@functools.cache
def _parsed(path: Path) -> tuple[ast.Module, list[str]]:
    text = path.read_text(encoding="utf-8")
    return ast.parse(text), text.splitlines()


def definitions(paths: tuple[str, ...]) -> dict[str, Definition]:
    """name -> Definition of every top-level class, function and constant of the module files
    `paths`, ranked in that order."""
    return _definitions(tuple(str(p) for p in paths))


@functools.cache
def _definitions(paths: tuple[str, ...]) -> dict[str, Definition]:
    defs: dict[str, Definition] = {}
    for rank, path in enumerate(map(Path, paths)):
        tree, lines = _parsed(path)
        for node in tree.body:
            names = [node.name] if isinstance(node, (ast.ClassDef, ast.FunctionDef)) else _assigned(node)
            for name in names:
                if name in defs:
                    raise ExportError(f"{name} is defined twice in {', '.join(Path(p).name for p in paths)}")
                defs[name] = Definition(rank, node.lineno, name, _lines_of(node, lines), path.name)
    return defs


@functools.lru_cache(maxsize=None)
def _names_used(source: str) -> frozenset[str]:
    """The global names a top-level definition reads: the names it loads, less those a function
    binds for itself (its arguments, what it assigns), which would otherwise copy a same-named
    definition it never calls (a local `window` copied targets.py's window()). Python makes a name
    assigned anywhere in a function local to all of it, so one set per function is exact enough."""
    # The definitions are the workbench's own source: the same few hundred strings every export.
    tree = ast.parse(source)
    local: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = node.args
            local.update(a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                         *filter(None, (arguments.vararg, arguments.kwarg))])
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    local.add(inner.id)
    return frozenset(n.id for n in ast.walk(tree)
                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in local)


def with_dependencies(defs: dict[str, Definition], names, defined=frozenset()) -> list[Definition]:
    """The definitions `names` of `defs` and every definition there that they use, transitively,
    in module rank and line order (each once, also where one statement binds several names).
    `defined`: names bound elsewhere (by the export itself), never taken from `defs`."""
    wanted: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in wanted or name in defined:
            continue
        if name not in defs:
            raise ExportError(f"{name!r} is not defined in the modules copied into the export")
        wanted.add(name)
        todo += [used for used in _names_used(defs[name].source) if used in defs and used not in wanted]
    unique = {(defs[name].rank, defs[name].line): defs[name] for name in wanted}
    return [unique[key] for key in sorted(unique)]


@functools.cache
def read_module(path: Path) -> Module:
    """The docstring, imports and main block of a module file (see Module). A top-level statement
    that is none of these and no definition stops the export: it would be lost in the copy."""
    tree, lines = _parsed(path)
    prelude, imports, main = [], [], None
    body = tree.body
    docstring = ast.get_docstring(tree, clean=False)
    if docstring is not None:
        body = body[1:]
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = path.parent
            for _ in range(node.level - 1):
                base = base.parent
            target = base.joinpath(*(node.module or "").split(".")).with_suffix(".py")
            imports.append((target, tuple(alias.name for alias in node.names)))
        elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        elif isinstance(node, (ast.Import, ast.ImportFrom, ast.Expr)):
            bound = [(alias.asname or alias.name).split(".")[0] for alias in getattr(node, "names", [])]
            prelude.append((_lines_of(node, lines), frozenset(bound)))
        elif _is_main_block(node):
            main = _lines_of(node, lines)
        elif not (isinstance(node, (ast.ClassDef, ast.FunctionDef)) or _assigned(node)):
            raise ExportError(f"{path.name}:{node.lineno}: a top-level statement the export cannot copy "
                              "(only imports, definitions, constants and the main block are copied)")
    return Module(path, docstring, tuple(prelude), tuple(imports), main)


def _module_order(entry: Path, chain: Path) -> list[Path]:
    """The modules `entry` imports, transitively, each after the modules it imports (so that a
    constant used at definition time is defined first), `entry` last; not `chain`."""
    order: list[Path] = []

    def visit(path: Path, seen: tuple[Path, ...]):
        if path in order or path == chain:
            return
        if path in seen:
            raise ExportError(f"{path.name} imports itself through {', '.join(p.name for p in seen)}")
        for target, _ in read_module(path).imports:
            visit(target, seen + (path,))
        order.append(path)

    visit(entry, ())
    return order


@dataclass(frozen=True)
class Program:
    """The copied parts of a program module, for an exporter to place around the chain's section."""
    docstring: str
    imports: str
    definitions: str
    main: str


PACKAGE = Path(__file__).resolve().parent.parent
_IDENTIFIER = re.compile(r"(?<![.\w])[A-Za-z_]\w*")
# Comments and string literals, whichever starts first (a quote in a comment is the comment's).
_NOT_CODE = re.compile(r"#[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'")


def code_names(source: str) -> frozenset[str]:
    """The identifiers of `source` that are code: not after a dot, not in a comment or a string (a
    chain section's notes, such as "...resizes every image...", would copy a `resize` otherwise).

    Example:
        >>> sorted(code_names('size = resize(x)  # then scaling\\nNOTE = "the shards"'))
        ['NOTE', 'resize', 'size', 'x']
    """
    return frozenset(_IDENTIFIER.findall(_NOT_CODE.sub(" ", source)))


def program_source(entry: Path, chain: Path, roots=(), whole=(), available=(), uses: str = "",
                   chain_imports=(), defined=()) -> Program:
    """The program of `entry` (a runtime module) for an export: the definitions its main block
    uses, every definition of the modules `whole` (files), the definitions `roots` (names, found
    in those, in the modules they import or in the modules `available`), and every definition of
    those modules that these use; the absolute imports of the modules copied from, entry's first.
    The names `entry` imports from `chain` are the export's to define, and so are `defined` (the
    stand-ins for what an export option leaves out): neither is copied. `uses`: the source of the
    export's own sections, whose names found in those modules are roots too, and which brings the
    `chain_imports` (statements) whose names it uses.

    Example:
        >>> runtime = PACKAGE / "runtime"
        >>> program = program_source(runtime / "kornia_program.py", runtime / "kornia_chain.py")
        >>> "def augment_images(" in program.definitions, "SEED = " in program.definitions
        (True, False)
    """
    # The identifiers not after a dot: a chain section is new text at every edit, and walking its tree
    # took 9 ms of a 30 ms DALI emit. (A name met only in a comment would copy one definition more:
    # tests/test_programs.py runs pyflakes over the export of every op.)
    wanted = code_names(uses)
    return _program(Path(entry), Path(chain), tuple(roots), tuple(map(Path, whole)), tuple(map(Path, available)),
                    wanted, tuple(chain_imports), frozenset(defined))


@functools.lru_cache(maxsize=64)
def _program(entry: Path, chain: Path, roots: tuple, whole: tuple, available: tuple, wanted: frozenset,
             chain_imports: tuple, defined: frozenset) -> Program:
    # A live preview emits at every edit, and the chain's names change rarely: each set copied once.
    order = _module_order(entry, chain)
    for path in whole + available:
        order += [p for p in _module_order(path, chain) if p not in order]
    order.remove(entry)
    order.append(entry)
    defs = definitions(tuple(map(str, order)))
    module = read_module(entry)
    if module.docstring is None or module.main is None:
        raise ExportError(f"{entry.name} needs a docstring (the export's) and a main block to be a program")
    own = [name for name, d in defs.items() if order[d.rank] in whole]
    main = [name for name in _names_used(module.main) if name in defs]
    imports, copied = _copied(order, [*main, *own, *roots], wanted, chain_imports, entry, defined)
    return Program(module.docstring, imports, copied, module.main)


@dataclass(frozen=True)
class Copied:
    """Definitions copied for a snippet, and the imports they need."""
    imports: str
    definitions: str


def copied_source(modules, roots, chain: Path, uses: str = "", chain_imports=()) -> Copied:
    """The definitions `roots` (names), found in the module files `modules` or the modules they
    import (never `chain`), with every definition they use and the import statements those need;
    `uses` and `chain_imports` as for program_source. A snippet's own classes come from here.

    Example:
        >>> runtime = PACKAGE / "runtime"
        >>> copied = copied_source([runtime / "rows.py"], ["sample_rows"], runtime / "kornia_chain.py")
        >>> "def sample_rows(" in copied.definitions, "import numpy as np" in copied.imports
        (True, True)
    """
    return _copied_source(tuple(map(Path, modules)), tuple(roots), Path(chain),
                          code_names(uses), tuple(chain_imports))


@functools.lru_cache(maxsize=64)
def _copied_source(modules: tuple, roots: tuple, chain: Path, wanted: frozenset, chain_imports: tuple) -> Copied:
    order: list[Path] = []
    for path in modules:
        order += [p for p in _module_order(path, chain) if p not in order]
    return Copied(*_copied(order, list(roots), wanted, chain_imports))


def _copied(order: list[Path], roots: list[str], wanted: frozenset, chain_imports: tuple,
            entry: Path | None = None, defined=frozenset()) -> tuple[str, str]:
    """(import section, definitions) of `roots` and the names of `wanted` found in the modules
    `order`, with what they use (never the names `defined`): each module's imports where what they
    bind is used (`entry`'s first), each statement once; the definitions under a banner per module,
    in module and line order, or with an `entry` in reading order (see top_down)."""
    defs = definitions(tuple(map(str, order)))
    copied = with_dependencies(defs, [*roots, *(name for name in wanted if name in defs)], defined)
    used = {order[d.rank] for d in copied}
    names = frozenset().union(wanted, *(_names_used(d.source) for d in copied))
    # What the statements among the imports read (os.environ.setdefault(...)) needs importing too.
    names |= frozenset().union(*(_names_used(text) for path in used for text, bound in read_module(path).prelude
                                 if not bound))
    imports: dict[str, str] = {}
    for text in chain_imports:
        node = ast.parse(text).body[0]
        if {(alias.asname or alias.name).split(".")[0] for alias in node.names} & wanted:
            imports.setdefault(text, text)
    for path in ([entry] if entry else []) + [p for p in order if p != entry and p in used]:
        for text, bound in read_module(path).prelude:
            if not bound or bound & names:
                imports.setdefault("\n".join(line for line in text.split("\n") if not line.startswith("#")), text)
    if entry is not None:
        copied = top_down(copied, order.index(entry))
    parts, last = [], None
    for d in copied:
        banner = ""
        if d.rank != last:
            path = order[d.rank]
            shown = path.relative_to(PACKAGE).as_posix() if path.is_relative_to(PACKAGE) else path.name
            banner = f"# ---- From the workbench's {shown} ----\n"
        parts.append(banner + d.source)
        last = d.rank
    return _import_section(list(imports.values())), "\n\n\n".join(parts)


@functools.lru_cache(maxsize=None)
def _definition_time_names(source: str) -> frozenset[str]:
    """The global names a top-level definition reads as it is defined, not when it is called: a
    constant's value; a function's decorators, defaults and annotations; a class's bases,
    keywords, decorators and body, less the bodies of its methods."""
    node = ast.parse(source).body[-1]
    parts: list[ast.AST] = []

    def signature(function):
        arguments = function.args
        parts.extend([*function.decorator_list, *arguments.defaults, *filter(None, arguments.kw_defaults),
                      *filter(None, [function.returns])])
        parts.extend(a.annotation for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                            *filter(None, (arguments.vararg, arguments.kwarg))] if a.annotation)

    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        signature(node)
    elif isinstance(node, ast.ClassDef):
        parts.extend([*node.decorator_list, *node.bases, *(k.value for k in node.keywords)])
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                signature(statement)
            else:
                parts.append(statement)
    else:
        parts.append(node)
    return frozenset(n.id for part in parts for n in ast.walk(part)
                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))


def top_down(copied: list[Definition], entry_rank: int) -> list[Definition]:
    """The copied definitions in reading order: the program's own first, in its order (the chain's
    augmentation, the loader, the command line), then the workbench code they use, module by module;
    a definition another needs as it is defined (a constant in a default, a base class) moves up to
    just before it.

    Example:
        >>> helper = Definition(0, 1, "LIMIT", "LIMIT = 3", "common.py")
        >>> program = [Definition(1, 1, "clip", "def clip(x, limit=LIMIT): return min(x, limit)", "p.py"),
        ...            Definition(1, 5, "main", "def main(): return clip(5)", "p.py")]
        >>> [d.name for d in top_down([helper, *program], entry_rank=1)]
        ['LIMIT', 'clip', 'main']
    """
    desired = ([d for d in copied if d.rank == entry_rank]
               + sorted((d for d in copied if d.rank != entry_rank), key=lambda d: (d.rank, d.line)))
    by_name = {d.name: d for d in copied}
    placed: dict[tuple[int, int], Definition] = {}
    visiting: set[tuple[int, int]] = set()

    def place(definition: Definition) -> None:
        key = (definition.rank, definition.line)
        if key in placed or key in visiting:
            return
        visiting.add(key)
        for name in sorted(_definition_time_names(definition.source)):
            if name in by_name:
                place(by_name[name])
        placed[key] = definition

    for definition in desired:
        place(definition)
    return list(placed.values())


def _import_section(statements: list[str]) -> str:
    """The import statements in the usual groups: the standard library's, the statements that must
    run before the third-party imports (environment variables), then the third-party imports."""
    stdlib, before, third = [], [], []
    for text in statements:
        node = ast.parse(text).body[0]
        if isinstance(node, ast.Expr):
            before.append(text)
            continue
        module = node.names[0].name if isinstance(node, ast.Import) else node.module
        group = stdlib if module.split(".")[0] in sys.stdlib_module_names else third
        group.append((isinstance(node, ast.ImportFrom), module.lower(), text))
    return "\n\n".join(part for part in ("\n".join(t for *_, t in sorted(stdlib)), "\n".join(before),
                                         "\n".join(t for *_, t in sorted(third))) if part)
