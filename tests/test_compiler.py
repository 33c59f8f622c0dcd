"""Generated modules compiled a block at a time (codegen/compiler.py): the same module as compiling
it whole, tracebacks and inspect.getsource showing the generated lines, unchanged blocks kept between
modules wherever they sit, and no export that falls back to compiling whole (which would cost the
preview ~50 ms)."""
import inspect
import traceback

import pytest

import workbench as wb
from workbench.codegen import emit, load_module
from workbench.codegen.compiler import compile_source, split_blocks
from workbench.examples import example_chain
from workbench.ops import REGISTRY


def run(source: str, filename: str = "<test>") -> dict:
    namespace = {"__name__": "generated"}
    for code in compile_source(source, filename):
        exec(code, namespace)
    return namespace


def top_level_variants(backend: str) -> list[wb.Chain]:
    """Chains whose exports differ at the top level, where the cuts are: every op that brings a class
    or a section of its own (Kornia's local modules, Albumentations' transforms, DALI's policies,
    groups and batch mixing); other ops only change lines inside functions."""
    group = wb.Chain(seed=1).add("OneOf", steps=[wb.Step.create("Rotate"), wb.Step.create("Invert")])
    if backend == "kornia":
        ops = [op for op, spec in REGISTRY.items() if spec.kornia is not None and spec.kornia.local]
    elif backend == "dali":
        ops = ["RandAugment", "AutoAugment", "MixUp", "CLAHE", "RandomResizedCrop"]
    else:
        ops = [op for op, spec in REGISTRY.items() if spec.supports(backend)]
    return [example_chain(), group] + [wb.Chain(seed=1).add(op) for op in ops]


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
def test_every_export_splits_into_blocks_that_each_compile(backend):
    chains = top_level_variants(backend)
    sources = {emit(chain, backend) for chain in chains}
    for source in sources:
        blocks = split_blocks(source)
        assert len(blocks) > 50 and "".join(text for _, text in blocks) == source
        for line, text in blocks:
            compile(text, "<block>", "exec", dont_inherit=True)  # raises where a cut splits a statement
        assert len(compile_source(source, "<x>")) == len(blocks)  # kept blockwise, not compiled whole


def test_a_module_run_by_blocks_is_the_module_run_whole():
    source = emit(example_chain(), "kornia")
    whole = {"__name__": "generated"}
    exec(compile(source, "<whole>", "exec"), whole)
    blocks = run(source)
    assert sorted(k for k in blocks if k != "__builtins__") == sorted(k for k in whole if k != "__builtins__")
    for name, value in whole.items():
        if inspect.isfunction(value) and value.__module__ == whole["__name__"]:  # (not contextlib's, say)
            assert blocks[name].__code__.co_names == value.__code__.co_names, name
            assert inspect.getsource(blocks[name]) in source, name
    assert blocks["SEED"] == whole["SEED"] and blocks["__doc__"] == whole["__doc__"]
    assert repr(blocks["build_augmentation"]()) == repr(whole["build_augmentation"]())


def test_tracebacks_and_getsource_show_the_generated_lines():
    source = "X = 1\n\n\ndef helper(v):\n    return 10 / v\n\n\ndef outer(v):\n    w = v - 1\n    return helper(w)\n"
    namespace = run(source)
    with pytest.raises(ZeroDivisionError) as info:
        namespace["outer"](1)
    frames = traceback.extract_tb(info.tb)[-2:]
    # Each line at its place in its block, a file of its own named by its text.
    assert [(f.lineno, f.line) for f in frames] == [(3, "return helper(w)"), (2, "return 10 / v")]
    assert all(f.filename.startswith("<workbench-block-") for f in frames) and frames[0].filename != frames[1].filename
    assert inspect.getsource(namespace["outer"]) == "def outer(v):\n    w = v - 1\n    return helper(w)\n"
    # A generated module too: getsource gives the function as the module has it.
    source = emit(example_chain(), "kornia")
    module = load_module(source, "kornia")
    shown = inspect.getsource(module.build_augmentation)
    assert shown.startswith("def build_augmentation(") and f"\n{shown}" in source


def test_unchanged_blocks_are_the_same_code_in_the_next_module():
    chain = example_chain()
    chain.seed = 24681357  # modules no other test loaded: both compiled here, one after the other
    before = load_module(emit(chain, "dali"), "dali")
    chain.steps[2].params["degrees"] = [-20.0, 31.0]
    after = load_module(emit(chain, "dali"), "dali")
    assert before is not after
    assert after.step_3_rotate.__code__ is not before.step_3_rotate.__code__  # its literal changed
    assert after.step_4_brightness.__code__ is before.step_4_brightness.__code__  # DALI's autograph reuses it
    assert after.augment_images.__code__ is before.augment_images.__code__
    # A step more moves every line below it; the runtime's code is still the same code.
    longer = load_module(emit(chain.copy().add("Rotate", p=0.5), "dali"), "dali")
    assert longer.augment_images.__code__ is before.augment_images.__code__
    assert longer.preview_pipeline.__wrapped__.__code__ is before.preview_pipeline.__wrapped__.__code__


def test_a_cut_inside_a_statement_falls_back_to_the_whole_source():
    source = 'S = """first\n\nx = 1\n"""\n\n\ndef f():\n    return S\n'
    assert len(split_blocks(source)) == 3  # a cut inside the string...
    assert len(compile_source(source, "<s>")) == 1  # ...which does not compile: compiled whole
    assert run(source)["f"]() == "first\n\nx = 1\n"


def test_a_syntax_error_is_reported_at_its_line_in_the_module():
    with pytest.raises(SyntaxError) as info:
        compile_source("a = 1\n\n\ndef f(:\n    pass\n", "<bad>")
    assert info.value.lineno == 4 and info.value.filename == "<bad>"
