"""The house has one direction: every import between the workbench's modules points down the
layers below (or stays inside its layer), no module reaches itself again through others, and
no import hides inside a function to dodge a cycle.

Layers, bottom to top (docs/architecture.md):
- foundation: errors, the safe-source helpers, and the runtime copied into every export;
- model: the op registry, the chain model, loading and checking images;
- engines: code emitters, backends, the throughput estimate, rendering, the support matrix;
- verbs: what users call on a chain (Chain: run, export, estimate) and the importers;
- app: the notebook app, the command line, the package's front door.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "workbench"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("workbench.errors", "workbench.literals", "workbench.runtime")),
    ("model", ("workbench.ops", "workbench.model", "workbench.data", "workbench.targets", "workbench.plans",
               "workbench.order")),
    ("engines", ("workbench.codegen", "workbench.backends", "workbench.estimate", "workbench.render",
                 "workbench.support_matrix")),
    ("verbs", ("workbench.importers", "workbench.chain", "workbench.examples", "workbench.check")),
    ("app", ("workbench.ui", "workbench.cli", "workbench.__main__", "workbench")),
]

# Imports of workbench modules inside functions, each with the reason it is not at the top.
LOCAL_IMPORTS_ALLOWED = {
    ("workbench", "workbench.ui"): "`wb.Workbench` imports ipywidgets only when asked for, so the "
                                   "headless API stays light",
}


def modules(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under `root` (a package named `package`)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = (package, *path.relative_to(root).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path], package: str) -> list[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for each import of a module in `known`.
    `from pkg import name` counts as importing the submodule pkg.name when there is one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            local = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[:len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                for alias in child.names:
                    sub = f"{target}.{alias.name}"
                    hit = sub if sub in known else target
                    if hit in known and hit != name:
                        found.append((hit, child.lineno, in_function))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name in known and alias.name != name and alias.name.split(".")[0] == package:
                        found.append((alias.name, child.lineno, in_function))
            visit(child, local)

    visit(tree, False)
    return found


def layer_of(module: str, layers=LAYERS) -> int | None:
    """Index of the layer whose longest prefix names `module`; None when no layer does."""
    best = None
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    return None if best is None else best[0]


def upward_imports(known: dict[str, Path], package: str, layers=LAYERS) -> list[str]:
    out = []
    for name, path in known.items():
        for target, line, _ in imports(name, path, known, package):
            low, high = layer_of(name, layers), layer_of(target, layers)
            if low is not None and high is not None and high > low:
                out.append(f"{name}:{line} ({layers[low][0]}) imports {target} ({layers[high][0]}), a layer above it")
    return out


def cycles(known: dict[str, Path], package: str) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    graph = {name: sorted({t for t, _, _ in imports(name, path, known, package)}) for name, path in known.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in graph:
        if v not in index:
            connect(v)
    return found


KNOWN = modules(PACKAGE, "workbench")


def test_every_module_has_a_layer():
    homeless = [name for name in KNOWN if layer_of(name) is None]
    assert not homeless, f"modules in no layer (add them to LAYERS in {Path(__file__).name}): {homeless}"


def test_imports_point_down():
    upward = upward_imports(KNOWN, "workbench")
    assert not upward, "imports that point up the house:\n" + "\n".join(upward)


def test_no_import_circles():
    circles = cycles(KNOWN, "workbench")
    assert not circles, "modules that import each other (directly or through others): " + \
        "; ".join(" <-> ".join(group) for group in circles)


def test_no_imports_hidden_in_functions():
    hidden = [f"{name}:{line} imports {target} inside a function"
              for name, path in KNOWN.items() for target, line, local in imports(name, path, KNOWN, "workbench")
              if local and (name, target) not in LOCAL_IMPORTS_ALLOWED]
    assert not hidden, "imports of workbench modules inside functions (move them to the top):\n" + "\n".join(hidden)


# ----- the checks themselves catch what they are for, on a small package ------------------
@pytest.fixture
def toy(tmp_path):
    root = tmp_path / "toy"
    (root / "engine").mkdir(parents=True)
    files = {
        "__init__.py": "from . import app\n",
        "model.py": "X = 1\n",
        "engine/__init__.py": "from .run import go\n",
        "engine/run.py": "from ..model import X\nfrom . import helper\n",
        "engine/helper.py": "def f():\n    from ..app import main\n",
        "app.py": "from .engine import go\nfrom .engine.run import go as again\n",
    }
    for rel, text in files.items():
        (root / rel).write_text(text)
    layers = [("model", ("toy.model",)), ("engine", ("toy.engine",)), ("app", ("toy.app", "toy"))]
    return modules(root, "toy"), layers


def test_checks_find_an_upward_import_inside_a_function(toy):
    known, layers = toy
    upward = upward_imports(known, "toy", layers)
    assert upward == ["toy.engine.helper:2 (engine) imports toy.app (app), a layer above it"]
    assert [(t, local) for t, _, local in imports("toy.engine.helper", known["toy.engine.helper"], known, "toy")] == \
        [("toy.app", True)]


def test_checks_find_the_circle_it_makes(toy):
    known, _ = toy
    assert cycles(known, "toy") == [["toy.app", "toy.engine", "toy.engine.helper", "toy.engine.run"]]
