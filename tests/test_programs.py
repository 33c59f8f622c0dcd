"""The programs an export carries are real modules (runtime/*_program.py), copied into every exported
file by one mechanism (codegen/source_copy.py): each runs on its own as the empty chain and gives
what the empty chain's export gives; every export defines every name it uses and imports nothing it
does not use; no Python hides in long string literals in the package, and the op specs declare
DALI code rather than spell it (runtime/dali_ops/ holds it)."""
import ast
import contextlib
import importlib
import io
import re
import subprocess
import sys
import textwrap
import tokenize
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.codegen import albumentations as albumentations_codegen, dali as dali_codegen, kornia as kornia_codegen
from workbench.codegen.options import everything
from workbench.codegen.source_copy import program_source
from workbench.errors import ExportError

from conftest import _loaded_from

PACKAGE = Path(wb.__file__).parent
CODEGEN = {"kornia": kornia_codegen, "albumentations": albumentations_codegen, "dali": dali_codegen}


def _save(main, folder, out) -> dict[str, np.ndarray]:
    with contextlib.redirect_stdout(io.StringIO()):
        main(["--images", str(folder), "--seed", "5", "--save", str(out)])
    with np.load(out) as data:
        return {key: data[key] for key in data.files}


@pytest.mark.parametrize("backend", sorted(CODEGEN))
def test_each_program_runs_on_its_own_as_the_empty_chains_export(backend, small_folder, tmp_path):
    program = importlib.import_module(f"workbench.runtime.{backend}_program")
    alone = _save(program.main, small_folder, tmp_path / "alone.npz")
    script = tmp_path / "empty.py"
    # (A chain needs a step: one switched off leaves the chain section the empty chain's.)
    wb.Chain(seed=3).add("HorizontalFlip", enabled=False).export(backend, path=script.name, folder=tmp_path)
    exported = _save(_loaded_from(script).main, small_folder, tmp_path / "exported.npz")
    assert sorted(alone) == sorted(exported) and "images" in alone
    for key in alone:
        assert np.array_equal(alone[key], exported[key], equal_nan=alone[key].dtype.kind == "f"), key


@pytest.mark.parametrize("backend", sorted(CODEGEN))
def test_the_chain_section_defines_every_name_the_program_takes_from_the_chain_module(backend):
    codegen = CODEGEN[backend]
    taken = {alias.name for node in ast.parse(codegen.PROGRAM.read_text()).body
             if isinstance(node, ast.ImportFrom) and node.module == codegen.CHAIN.stem for alias in node.names}
    assert {"SEED", "augment_targets", "TARGETS_REFUSED"} <= taken
    chain = wb.Chain(seed=4).add("HorizontalFlip").add("Rotate", p=0.5)
    tree = ast.parse(chain.export(backend, **everything(backend).__dict__))
    defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    defined |= {target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets
                if isinstance(target, ast.Name)}
    assert taken <= defined, f"the export never defines {sorted(taken - defined)}"
    # The empty chain module defines what it stands for, and nothing an export lacks.
    own = {node.name for node in ast.parse(codegen.CHAIN.read_text()).body if isinstance(node, ast.FunctionDef)}
    own |= {target.id for node in ast.parse(codegen.CHAIN.read_text()).body if isinstance(node, ast.Assign)
            for target in node.targets}
    assert own <= defined, f"{codegen.CHAIN.name} defines {sorted(own - defined)}, which no export does"


def _every_op_exports(backend, folder: Path) -> list[Path]:
    """Exports of `backend` written to `folder`: per op, alone and after a Resize, without the export
    options and with all of them (a stand-in left unbound, or code reached only without an option, would
    show in one of the two); a group likewise."""
    chains = {op: [wb.Chain(seed=1).add(op), wb.Chain(seed=1).add("Resize", size=[64, 64]).add(op)]
              for op in wb.list_ops(backend=backend)}
    chains["group"] = [wb.Chain().add("OneOf", steps=[wb.Chain().add("Invert").steps[0],
                                                      wb.Chain().add("Rotate").steps[0]])]
    paths = []
    for name, variants in chains.items():
        for k, chain in enumerate(variants):
            for options in ({}, everything(backend).__dict__):
                path = folder / f"{backend}_{name}_{k}{'_all' if options else ''}.py"
                path.write_text(chain.export(backend, **options))
                paths.append(path)
    return paths


@pytest.mark.parametrize("backend", sorted(CODEGEN))
def test_every_export_defines_what_it_uses_and_imports_only_what_it_uses(backend, tmp_path):
    # ruff's pyflakes rules over one export per op: an undefined name is a NameError waiting in some
    # path no run took; an unused import is a copy that did not follow what the code uses.
    paths = _every_op_exports(backend, tmp_path)
    # The project's own rules (pyproject.toml's ruff settings): pyflakes, pycodestyle, 120 columns.
    found = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "E,F,W",
                            "--line-length", "120", "--output-format", "concise", *map(str, paths)],
                           capture_output=True, text=True)
    assert found.returncode == 0, found.stdout[-3000:] + found.stderr[-2000:]


@pytest.mark.parametrize("backend", sorted(CODEGEN))
def test_an_export_carries_the_target_functions_its_chain_uses_and_not_the_others(backend):
    flip, rotate = (wb.Chain().add(op).export(backend, targets=True) for op in ("HorizontalFlip", "Rotate"))
    assert "def horizontal_flip(" in flip and "def rotation(" not in flip
    assert "def rotation(" in rotate and "def horizontal_flip(" not in rotate
    assert "def move_batch(" in flip and "def augment_targets(" in flip  # what every export's --coco runs


def _module(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return path


def test_program_source_copies_what_the_program_uses_with_its_imports(tmp_path):
    _module(tmp_path, "__init__", "")
    _module(tmp_path, "chain", "SEED = 0\n")
    _module(tmp_path, "helpers", '''
        import json
        import math

        # Half of a value.
        HALF = 0.5


        def used(x):
            return math.floor(x * HALF)


        def unused(x):
            return json.dumps(x)
        ''')
    entry = _module(tmp_path, "program", '''
        """The program's docstring."""
        import os

        from .chain import SEED
        from .helpers import HALF, used


        def main(half=HALF):
            return used(SEED) + len(os.sep) * half


        if __name__ == "__main__":
            main()
        ''')
    program = program_source(entry, tmp_path / "chain.py")
    assert program.docstring == "The program's docstring."
    assert program.imports == "import math\nimport os"  # json only served what was not copied
    assert "# Half of a value.\nHALF = 0.5" in program.definitions
    assert "def used(" in program.definitions and "def main(" in program.definitions
    assert "def unused(" not in program.definitions and "SEED = " not in program.definitions
    # Top-down: the program's own code first, then what it uses; a constant it needs as it is
    # defined (a default) just before it.
    positions = [program.definitions.index(text) for text in ("HALF = 0.5", "def main(", "def used(")]
    assert positions == sorted(positions)
    assert program.main.startswith('if __name__ == "__main__":')


def test_program_source_refuses_a_statement_it_would_drop(tmp_path):
    _module(tmp_path, "chain", "")
    entry = _module(tmp_path, "program", '''
        """Docstring."""
        for k in range(3):
            print(k)


        if __name__ == "__main__":
            pass
        ''')
    with pytest.raises(ExportError, match="program.py:3: a top-level statement the export cannot copy"):
        program_source(entry, tmp_path / "chain.py")


def _docstrings(tree) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def test_no_long_string_literal_holds_code_in_the_package():
    # Code lives in modules (runtime/), not in strings: the package's string literals of 20 lines or
    # more, docstrings aside, add up to at most 100 lines (today: the app's stylesheet).
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstrings(tree)
        long += [(path.relative_to(PACKAGE).as_posix(), node.lineno, node.value.count("\n") + 1)
                 for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
                 and id(node) not in docstrings and node.value.count("\n") + 1 >= 20]
    assert sum(lines for *_, lines in long) <= 100, long


# A string that spells DALI code: an operator call (`fn.resize(`), or a string that is an operator's
# name (`"fn.flip"`, handed to a call builder). Prose that names an operator ("fn.clahe takes one
# clip limit") is not code.
_DALI_CODE = re.compile(r"\b(?:fn|dmath)\.[A-Za-z_][\w.]*(?:\(|$)")
_QUOTES = re.compile(r"^[rbfuRBFU]*('\'\'|\"\"\"|'|\")|('\'\'|\"\"\"|'|\")$")


def dali_code_lines(text: str) -> int:
    """How many source lines of `text` hold a string literal (or an f-string's text) spelling DALI code."""
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            if _DALI_CODE.search(_QUOTES.sub("", token.string)):
                lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines)


def test_op_specs_declare_dali_code_rather_than_spell_it():
    # Issue 28's bound: at most 80 source lines in ops/ write DALI code in strings (draw declarations
    # and a few one-line operator names); lowerings call the functions of runtime/dali_ops/.
    counts = {path.name: dali_code_lines(path.read_text(encoding="utf-8"))
              for path in sorted((PACKAGE / "ops").glob("*.py"))}
    assert sum(counts.values()) <= 80, counts
    # The counter itself: a call in an f-string counts, prose naming an operator does not.
    assert dali_code_lines('x = f"{a} = fn.resize({b})"\ny = "fn.flip"\nz = "fn.clahe takes one number"\n') == 2
