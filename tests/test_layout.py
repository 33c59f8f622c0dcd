"""Generated code within the project's 120 columns (codegen/layout.py): long lines broken as a person
would, and never a change of meaning: every op's export, wrapped, has the very syntax tree it had."""
import ast

import pytest

import workbench as wb
from workbench.codegen import EMITTERS, albumentations as albumentations_codegen, dali as dali_codegen
from workbench.codegen import kornia as kornia_codegen, snippets
from workbench.codegen.layout import wrapped
from workbench.codegen.snippets import SNIPPETS, emit_snippet
from workbench.model import ChainModel


def test_a_long_call_breaks_after_its_commas_under_its_first_argument():
    line = "    K.RandomResizedCrop(size=(224, 224), scale=(0.08, 1.0), ratio=(0.75, 1.3333), resample='BILINEAR')"
    assert wrapped(line, width=60).split("\n") == [
        "    K.RandomResizedCrop(size=(224, 224), scale=(0.08, 1.0),",
        "                        ratio=(0.75, 1.3333),",
        "                        resample='BILINEAR')"]


def test_a_long_comment_goes_on_under_its_text_and_a_docstring_is_left_alone():
    source = ('#   1. Resize(size=[224, 224] interpolation=bilinear antialias=True) p=1\n'
              '"""Doc.\n' + "# x" * 20 + '\n"""\n')
    lines = wrapped(source, width=40).split("\n")
    assert lines[:3] == ["#   1. Resize(size=[224, 224]", "#       interpolation=bilinear",
                         "#       antialias=True) p=1"]
    assert lines[3:] == ['"""Doc.', "# x" * 20, '"""', ""]  # inside a string: as it is, comment-like or not


def test_unpacking_names_and_long_strings_in_brackets_break_with_the_same_meaning():
    source = ("first_name, second_name, third_name = some_function(argument_one, argument_two)\n"
              "STEPS = ((1, 'a long explanation of why this step runs where it runs, in several words'),)\n")
    out = wrapped(source, width=50)
    assert max(len(line) for line in out.split("\n")) <= 50 and out.startswith("(first_name, second_name,\n")
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(source))


# Programs whose chain sections hold the longest generated lines (policies' tables, GPU-only notes, a
# sun flare's many draws, a box-reading crop); the rest of a program is copied code, untouched.
LONG_LINES = ("AutoAugment", "TorchvisionAutoAugment", "TrivialAugment", "ElasticTransform", "RandomSunFlare",
              "RandomIoUCrop", "ColorJitter")


@pytest.mark.parametrize("backend", sorted(EMITTERS))
def test_exports_keep_their_syntax_tree_when_wrapped_and_fit_the_line_length(backend, monkeypatch):
    # Every op's snippet (whose DALI form holds every step function), and the programs of LONG_LINES.
    chains = {op: ChainModel.from_dict(wb.Chain(seed=1).add("Resize", size=[64, 64]).add(op).to_dict())
              for op in wb.list_ops(backend=backend)}
    cases = [("program", op) for op in LONG_LINES if op in chains]
    if backend in SNIPPETS:
        cases += [("snippet", op) for op in chains]
    forms = {"program": EMITTERS[backend], "snippet": lambda chain: emit_snippet(chain, backend)}
    outputs = {}
    for form, op in cases:
        try:
            outputs[form, op] = forms[form](chains[op])
        except wb.ExportError:
            pass  # a snippet refuses mixing and box-reading steps (tests/test_snippets.py)
    for module in (kornia_codegen, dali_codegen, albumentations_codegen, snippets):
        monkeypatch.setattr(module, "wrapped", lambda source: source)
    changed = 0
    for (form, op), out in outputs.items():
        source = forms[form](chains[op])
        assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(source)), (backend, op, form)
        assert max(map(len, out.splitlines())) <= 120, (backend, op, form)
        changed += out != source
    assert changed >= 5  # long lines were there to break: the comparison saw the wrapping at work
