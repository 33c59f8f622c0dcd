"""Safety: guarantee 5 (bad or hostile input -> a ChainError that names the problem, and the
user's chain is not lost) and guarantee 6 (only registered op names and validated literal
values reach generated source; YAML is loaded safely; export paths cannot escape their folder).

Everything here is text generation and validation: no subprocess, no Kornia run.
"""
from __future__ import annotations

import ast
import copy
import functools
import json
import keyword
import math
import numbers
import os
import time
from pathlib import Path

import numpy as np
import pytest

import workbench as wb
from workbench.model import FORMAT_NAME, MAX_FILE_BYTES, MAX_SEED, MAX_STEPS, Step
from workbench import literals
from workbench.ops import REGISTRY
from workbench.ops.params import Choice, Flag, Floats, Number, OpRanges, Range, Sides, Size, Span, Thresholds
from workbench.codegen.dali import DALI_OPS
from workbench.codegen.source_copy import definitions

from conftest import comment_text
from export_ast import block_body, blocks, parse_export

# ---------------------------------------------------------------------------------------
# Hostile values
# ---------------------------------------------------------------------------------------
# Text that must never appear in generated source.
MALICIOUS = "__import__('os').system('echo pwned')"
CODE_STRING = "bilinear'); import os; os.system('x') #"


class EvilFloat(float):
    """A float whose repr/str is code."""

    def __repr__(self):
        return MALICIOUS

    __str__ = __repr__


class EvilInt(int):
    """An int whose repr/str is code."""

    def __repr__(self):
        return MALICIOUS

    __str__ = __repr__


class EvilStr(str):
    """A str whose repr/str is code but which compares like its plain value."""

    def __repr__(self):
        return MALICIOUS

    __str__ = __repr__


class ReprOnlyStr(str):
    """A str whose repr (only) is code."""

    def __repr__(self):
        return MALICIOUS


class ShapeShiftingStr(str):
    """A str that claims to equal anything and renders as code."""

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__

    def __repr__(self):
        return MALICIOUS

    __str__ = __repr__

    def upper(self):
        return MALICIOUS

    def lower(self):
        return MALICIOUS


class EvilObject:
    """Not a number, but quacks like one (__float__, __int__, __index__) and reprs as code."""

    def __repr__(self):
        return MALICIOUS

    __str__ = __repr__

    def __float__(self):
        return 0.5

    def __int__(self):
        return 1

    def __index__(self):
        return 1


class EvilList(list):
    def __repr__(self):
        return MALICIOUS

    __str__ = __repr__


def _not_implemented(self, *args):
    return NotImplemented


def evil_real(x: float) -> numbers.Real:
    """A genuine numbers.Real subclass (not a float) whose float value is `x` and repr is code."""
    ns = {name: _not_implemented for name in numbers.Real.__abstractmethods__}
    whole = int(x) if math.isfinite(x) else 0
    ns.update(
        __float__=lambda self: float(x),
        __int__=lambda self: whole,
        __index__=lambda self: whole,
        __trunc__=lambda self: whole,
        __repr__=lambda self: MALICIOUS,
        __str__=lambda self: MALICIOUS,
        __hash__=lambda self: 0,
    )
    return type("EvilReal", (numbers.Real,), ns)()


# (label, value): none of these is a valid number, pair element, size side, flag or choice.
HOSTILE_SCALARS = [
    ("code-string", CODE_STRING),
    ("dunder-import", "__import__('os')"),
    ("newline-string", "1.0\nimport os"),
    ("numeric-string", "0.5"),
    ("nan", float("nan")),
    ("inf", float("inf")),
    ("-inf", float("-inf")),
    ("1e309", 1e309),
    ("numpy-nan", np.float64("nan")),
    ("True", True),
    ("False", False),
    ("None", None),
    ("dict", {"__import__": "os"}),
    ("nested-list", [0.5, [0.5]]),
    ("set", {0.5}),
    ("bytes", b"0.5"),
    ("complex", 1 + 0j),
    ("object-evil-repr", EvilObject()),
    ("float-subclass-nan-evil-repr", EvilFloat("nan")),
    ("float-subclass-inf-evil-repr", EvilFloat("inf")),
    ("real-subclass-nan", evil_real(float("nan"))),
    ("real-subclass-inf", evil_real(float("inf"))),
]

# Whole values put where a list ([lo, hi], [h, w], [m0, m1, m2]) is expected.
HOSTILE_WHOLE_LISTS = [
    ("code-string", CODE_STRING),
    ("pair-as-string", "[0.1, 0.2]"),
    ("number", 0.5),
    ("nan", float("nan")),
    ("True", True),
    ("None", None),
    ("dict", {"lo": 0.1, "hi": 0.2}),
    ("set", {0.1, 0.2}),
    ("bytes", b"\x01\x02"),
    ("numpy-array", np.array([0.1, 0.2, 0.3])),
    ("empty-list", []),
    ("too-long", [0.1] * 9),
    ("object-evil-repr", EvilObject()),
]

HOSTILE_CHOICES = [
    ("code-string", CODE_STRING),
    ("newline", "bilinear\nimport os"),
    ("nul", "bilinear\x00"),
    ("upper-case", "BILINEAR"),
    ("padded", " bilinear"),
    ("list", ["bilinear"]),
    ("bytes", b"bilinear"),
]

HOSTILE_FLAGS = [("int-1", 1), ("int-0", 0), ("string-true", "true"), ("string-yes", "yes"),
                 ("float-1", 1.0), ("numpy-bool", np.bool_(True)), ("list", [True])]


def _spec_params():
    for op, spec in REGISTRY.items():
        for prm in spec.params:
            yield op, spec, prm


def _hostile_param_cases():
    """(op, param name, value) for every op, every parameter and every hostile value."""
    cases = []
    for op, spec, prm in _spec_params():
        default = spec.defaults()[prm.name]
        if isinstance(prm, Flag):
            values = [(lbl, v) for lbl, v in HOSTILE_SCALARS if not isinstance(v, bool)] + HOSTILE_FLAGS
            for label, value in values:
                cases.append(pytest.param(op, prm.name, value, id=f"{op}.{prm.name}-{label}"))
        elif isinstance(prm, Choice):
            for label, value in HOSTILE_SCALARS + HOSTILE_CHOICES:
                cases.append(pytest.param(op, prm.name, value, id=f"{op}.{prm.name}-{label}"))
        elif isinstance(prm, Number):
            for label, value in HOSTILE_SCALARS:
                cases.append(pytest.param(op, prm.name, value, id=f"{op}.{prm.name}-{label}"))
        elif isinstance(prm, (Range, Size, Floats, Sides)):
            for label, value in HOSTILE_SCALARS:
                bad = list(default)
                bad[0] = value
                cases.append(pytest.param(op, prm.name, bad, id=f"{op}.{prm.name}[0]-{label}"))
            for label, value in HOSTILE_WHOLE_LISTS:
                if isinstance(prm, Span) and label == "number":  # a Span reads one number v as [v, v]
                    continue
                if isinstance(prm, Thresholds) and label == "too-long":  # any number of thresholds
                    continue
                cases.append(pytest.param(op, prm.name, value, id=f"{op}.{prm.name}-{label}"))
        elif isinstance(prm, OpRanges):  # {op name: [lo, hi]}: the whole value, an op name, an entry
            for label, value in HOSTILE_WHOLE_LISTS:
                cases.append(pytest.param(op, prm.name, value, id=f"{op}.{prm.name}-{label}"))
            for label, key in HOSTILE_CHOICES:
                if isinstance(key, (str, bytes)):  # a mapping's key
                    cases.append(pytest.param(op, prm.name, {key: []}, id=f"{op}.{prm.name}-key-{label}"))
            entry = next(o.name for o in prm.known if o.has_magnitude)
            for label, value in HOSTILE_SCALARS:
                cases.append(pytest.param(op, prm.name, {entry: value}, id=f"{op}.{prm.name}.{entry}-{label}"))
                cases.append(pytest.param(op, prm.name, {entry: [value, 1.0]},
                                          id=f"{op}.{prm.name}.{entry}[0]-{label}"))
        else:  # a new Param kind: this file must learn about it
            raise AssertionError(f"{op}.{prm.name}: unknown parameter kind {type(prm).__name__}")
    return cases


def _chain_with(step: dict) -> dict:
    """A chain whose step 2 is `step` (step 1 is valid), so the message must name the right step."""
    return {"seed": 3, "steps": [{"op": "VerticalFlip", "p": 0.5}, step]}


def _chain_error(data) -> str:
    with pytest.raises(wb.ChainError) as info:
        wb.Chain.from_dict(data)
    return str(info.value)


def _plain(value):
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _assert_plain_types(value):
    """Every leaf is exactly bool/int/float/str (no subclass that could carry a custom repr)."""
    if isinstance(value, dict):
        assert type(value) is dict
        for k, v in value.items():
            assert type(k) is str
            _assert_plain_types(v)
    elif isinstance(value, (list, tuple)):
        assert type(value) in (list, tuple), type(value)
        for v in value:
            _assert_plain_types(v)
    else:
        assert type(value) in (bool, int, float, str), f"{value!r} is a {type(value).__name__}"


def _files_under(root: Path) -> dict[str, bytes | str]:
    """Every entry under root (links not followed): path -> content or link target."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_file():
                out[rel] = p.read_bytes()
            else:
                out[rel] = "<dir>"
    return out


def _alias_bomb(depth: int, width: int) -> str:
    """A YAML flow node where each level is `width` aliases of the level below (width**depth leaves)."""
    node = "&a0 [lol]"
    for i in range(1, depth + 1):
        node = f"&a{i} [{node}" + f", *a{i - 1}" * (width - 1) + "]"
    return node


# ---------------------------------------------------------------------------------------
# 1. Injection through every parameter, op name, p, seed, enabled and unknown keys
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("op, name, value", _hostile_param_cases())
def test_hostile_parameter_value_is_a_chain_error_naming_step_and_parameter(op, name, value):
    msg = _chain_error(_chain_with({"op": op, "params": {name: value}}))
    assert f"step 2 ({op})" in msg, msg
    assert f"parameter '{name}'" in msg, msg


def _numeric_params():
    return [pytest.param(op, prm, id=f"{op}.{prm.name}") for op, _, prm in _spec_params()
            if isinstance(prm, (Number, Range, Size, Floats))]


@pytest.mark.parametrize("op, prm", _numeric_params())
def test_out_of_range_value_names_the_valid_range(op, prm):
    spec = REGISTRY[op]
    default = spec.defaults()[prm.name]
    for beyond in (prm.hi + 1, prm.lo - 1):
        if isinstance(prm, Number):
            value = beyond
        elif isinstance(prm, Range):
            value = [prm.lo, beyond] if beyond > prm.hi else [beyond, prm.hi]
        else:
            value = list(default)
            value[-1] = beyond
        msg = _chain_error(_chain_with({"op": op, "params": {prm.name: value}}))
        assert f"step 2 ({op})" in msg and f"parameter '{prm.name}'" in msg, msg
        assert f"[{prm.lo}, {prm.hi}]" in msg, msg


@pytest.mark.parametrize("op, prm", [pytest.param(op, prm, id=f"{op}.{prm.name}")
                                     for op, _, prm in _spec_params() if isinstance(prm, Range)])
def test_reversed_range_is_refused_with_the_fix(op, prm):
    lo, hi = prm.random(np.random.default_rng(0))
    if lo == hi:
        hi = min(prm.hi, lo + 0.5)
    msg = _chain_error(_chain_with({"op": op, "params": {prm.name: [hi, lo]}}))
    assert f"step 2 ({op}): parameter '{prm.name}' has lo > hi ({hi} > {lo}); write it as [{lo}, {hi}]" in msg


@pytest.mark.parametrize("op, prm", [pytest.param(op, prm, id=f"{op}.{prm.name}")
                                     for op, _, prm in _spec_params() if isinstance(prm, Choice)])
def test_choice_error_lists_the_options(op, prm):
    msg = _chain_error(_chain_with({"op": op, "params": {prm.name: CODE_STRING}}))
    assert f"step 2 ({op}): parameter '{prm.name}' must be one of {list(prm.options)}" in msg


def test_non_integer_and_even_kernel_sizes_are_refused():
    msg = _chain_error(_chain_with({"op": "GaussianBlur", "params": {"kernel_size": 5.5}}))
    assert "step 2 (GaussianBlur): parameter 'kernel_size' must be an integer, got 5.5" in msg
    msg = _chain_error(_chain_with({"op": "GaussianBlur", "params": {"kernel_size": 6}}))
    assert "step 2 (GaussianBlur): parameter 'kernel_size' must be an odd integer, got 6" in msg
    msg = _chain_error(_chain_with({"op": "Resize", "params": {"size": [64.5, 64]}}))
    assert "step 2 (Resize): parameter 'size' must be an integer, got 64.5" in msg


HUGE = 10**400  # json.loads and yaml.safe_load both produce such ints from plain digits


@pytest.mark.parametrize("op, name, value", [
    pytest.param("Erase", "value", HUGE, id="Number-float"),
    pytest.param("GaussianBlur", "kernel_size", HUGE, id="Number-integer"),
    pytest.param("Rotate", "degrees", [-HUGE, 0.0], id="Range"),
    pytest.param("Resize", "size", [HUGE, 64], id="Size"),
    pytest.param("Normalize", "std", [HUGE, 0.2, 0.2], id="Floats"),
    pytest.param("Erase", "value", -HUGE, id="Number-negative"),
])
def test_huge_int_parameter_is_a_chain_error(op, name, value):
    msg = _chain_error(_chain_with({"op": op, "params": {name: value}}))
    assert f"step 2 ({op})" in msg and f"parameter '{name}'" in msg, msg


def test_huge_int_p_is_a_chain_error():
    msg = _chain_error(_chain_with({"op": "Rotate", "p": HUGE}))
    assert "step 2 (Rotate): p must be a number in [0, 1]" in msg


@pytest.mark.parametrize("loader, text", [
    pytest.param(wb.Chain.from_json, '{"steps": [{"op": "Rotate", "params": {"degrees": [-1%s, 0]}}]}' % ("0" * 400),
                 id="json-param"),
    pytest.param(wb.Chain.from_json, '{"steps": [{"op": "Rotate", "p": 1%s}]}' % ("0" * 400), id="json-p"),
    pytest.param(wb.Chain.from_yaml, "steps: [{op: Erase, params: {value: 1%s}}]" % ("0" * 400), id="yaml-param"),
])
def test_huge_int_from_a_file_is_a_chain_error(loader, text):
    with pytest.raises(wb.ChainError) as info:
        loader(text)
    assert "step 1" in str(info.value)


class Flaky(float):
    """Validates as 0.5 the first time it is converted, then turns into NaN."""

    def __new__(cls):
        obj = super().__new__(cls, 0.5)
        obj.calls = 0
        return obj

    def __float__(self):
        self.calls += 1
        return 0.5 if self.calls == 1 else math.nan


def test_number_is_converted_once_so_it_cannot_change_after_the_check():
    chain = wb.Chain(seed=1)
    try:
        chain.add("Rotate", degrees=[Flaky(), 2.0])
    except wb.ChainError as exc:
        assert "parameter 'degrees'" in str(exc)
        return
    # Accepted: then what was stored must be the finite value that passed the check.
    lo, hi = chain.steps[0].params["degrees"]
    assert math.isfinite(lo) and lo == 0.5 and hi == 2.0, chain.steps[0].params


@pytest.mark.parametrize("name", [
    "HorizontalFlip; import os", "__import__", "HorizontalFlip\nimport os", "os.system", "",
    " HorizontalFlip", "horizontalflip", "Horizontal Flip", "K.RandomHorizontalFlip", "RandomHorizontalFlip",
    "HorizontalFlip()", "__class__",
])
def test_hostile_op_name_string_is_an_unknown_op(name):
    msg = _chain_error(_chain_with({"op": name}))
    assert f"unknown op {name!r}" in msg, msg


@pytest.mark.parametrize("name", [None, 1, 1.5, True, ["HorizontalFlip"], {"op": "HorizontalFlip"},
                                  b"HorizontalFlip", EvilObject()],
                         ids=["None", "int", "float", "True", "list", "dict", "bytes", "object"])
def test_non_string_op_is_refused(name):
    msg = _chain_error(_chain_with({"op": name}))
    assert "step 2: 'op' must be an op name" in msg, msg


def test_missing_op_is_refused():
    assert "step 2: missing 'op'" in _chain_error(_chain_with({"params": {"degrees": [1, 2]}}))


@pytest.mark.parametrize("p", [2, -0.1, 1.0000001, float("nan"), float("inf"), 1e309, True, False, "0.5", None,
                               [0.5], {"p": 0.5}, EvilFloat("nan"), evil_real(float("nan")), evil_real(2.0),
                               EvilObject(), 1 + 0j],
                         ids=["2", "-0.1", "just-above-1", "nan", "inf", "1e309", "True", "False", "string", "None",
                              "list", "dict", "float-subclass-nan", "real-subclass-nan", "real-subclass-2",
                              "object", "complex"])
def test_hostile_p_is_refused(p):
    msg = _chain_error(_chain_with({"op": "Rotate", "p": p}))
    assert "step 2 (Rotate): p must be a number in [0, 1]" in msg, msg


@pytest.mark.parametrize("op", [n for n, s in REGISTRY.items() if s.always_applies])
def test_size_changing_op_must_have_p_one(op):
    msg = _chain_error(_chain_with({"op": op, "p": 0.5}))
    assert f"step 2 ({op}): {op} must apply to every sample" in msg and "p must be 1.0, got 0.5" in msg


@pytest.mark.parametrize("seed", [-1, MAX_SEED + 1, HUGE, 1.5, 7.0, "7", True, None, [7], float("nan"),
                                  EvilInt(-5), EvilObject()],
                         ids=["-1", "max+1", "huge", "1.5", "7.0", "string", "True", "None", "list", "nan",
                              "int-subclass-negative", "object"])
def test_hostile_seed_is_refused(seed):
    msg = _chain_error({"seed": seed, "steps": [{"op": "Rotate"}]})
    assert f"seed must be an integer in [0, {MAX_SEED}]" in msg, msg
    with pytest.raises(wb.ChainError, match=r"seed must be an integer"):
        wb.Chain(seed=seed)


def test_seed_is_normalised_to_a_plain_int():
    chain = wb.Chain.from_dict({"seed": EvilInt(5), "steps": [{"op": "Rotate"}]})
    assert type(chain.seed) is int and chain.seed == 5
    src = chain.export("kornia")
    assert MALICIOUS not in src and "\nSEED = 5\n" in src


@pytest.mark.parametrize("enabled", [1, 0, "true", "false", "yes", None, [True], 1.0, np.bool_(True)],
                         ids=["1", "0", "string-true", "string-false", "yes", "None", "list", "float", "numpy-bool"])
def test_hostile_enabled_is_refused(enabled):
    msg = _chain_error(_chain_with({"op": "Rotate", "enabled": enabled}))
    assert "step 2 (Rotate): 'enabled' must be true or false" in msg, msg


@pytest.mark.parametrize("extra", [{"evil": 1}, {"__class__": "os"}, {"Steps": []}, {3: 4},
                                   {"steps\nimport os": 1}],
                         ids=["evil", "dunder", "case", "int-key", "newline-key"])
def test_unknown_chain_keys_are_refused(extra):
    msg = _chain_error({"seed": 1, "steps": [{"op": "Rotate"}], **extra})
    assert "unknown chain key(s)" in msg and str(sorted(map(str, extra))) in msg, msg


@pytest.mark.parametrize("extra", [{"param": {}}, {"__import__": "os"}, {"P": 1.0}, {0: 1}],
                         ids=["param-typo", "dunder", "case", "int-key"])
def test_unknown_step_keys_are_refused(extra):
    msg = _chain_error(_chain_with({"op": "Rotate", **extra}))
    assert "step 2: unknown key(s)" in msg and str(sorted(map(str, extra))) in msg, msg


@pytest.mark.parametrize("key", ["angle", "degrees')\nimport os", "__import__", "p"])
def test_unknown_parameter_is_refused_and_lists_valid_ones(key):
    msg = _chain_error(_chain_with({"op": "Rotate", "params": {key: [1, 2]}}))
    assert f"step 2 (Rotate): unknown parameter {key!r}; Rotate takes: degrees, interpolation" in msg


def test_parameter_on_an_op_without_parameters_is_refused():
    msg = _chain_error(_chain_with({"op": "HorizontalFlip", "params": {"p": 1.0}}))
    assert "step 2 (HorizontalFlip): unknown parameter 'p'; HorizontalFlip takes: none" in msg


@pytest.mark.parametrize("params", [[["degrees", [1, 2]]], "degrees=[1, 2]", 5, EvilObject()],
                         ids=["pairs", "string", "int", "object"])
def test_params_must_be_a_mapping(params):
    msg = _chain_error(_chain_with({"op": "Rotate", "params": params}))
    assert "step 2 (Rotate): 'params' must be a mapping" in msg, msg


@pytest.mark.parametrize("step", ["HorizontalFlip", ["op", "HorizontalFlip"], None, 5],
                         ids=["string", "list", "None", "int"])
def test_step_must_be_a_mapping(step):
    assert "step 2: must be a mapping" in _chain_error(_chain_with(step))


@pytest.mark.parametrize("steps", ["HorizontalFlip", {"op": "HorizontalFlip"}, None, 3],
                         ids=["string", "dict", "None", "int"])
def test_steps_must_be_a_list(steps):
    assert "'steps' must be a list of steps" in _chain_error({"seed": 1, "steps": steps})


def test_empty_and_oversized_chains_are_refused():
    assert "the chain has no steps" in _chain_error({"seed": 1, "steps": []})
    msg = _chain_error({"seed": 1, "steps": [{"op": "HorizontalFlip"}] * 10_000})
    assert f"at most {MAX_STEPS} are allowed" in msg


def test_deeply_nested_parameter_value_is_a_chain_error():
    nested: list = []
    for _ in range(10_000):
        nested = [nested]
    msg = _chain_error(_chain_with({"op": "Rotate", "params": {"degrees": nested}}))
    assert "step 2 (Rotate)" in msg and "parameter 'degrees'" in msg


@pytest.mark.parametrize("backend", ["dali; import os", "kornia\n", "__import__('os')", "KORNIA", ""])
def test_unknown_export_backend_is_refused(backend):
    chain = wb.Chain(seed=1).add("Rotate")
    with pytest.raises(wb.ChainError) as info:
        chain.export(backend)
    assert f"unknown backend {backend!r} for export" in str(info.value)


# ---------------------------------------------------------------------------------------
# 2. Exported source: allowlisted imports, registered modules, literal-only arguments
# ---------------------------------------------------------------------------------------
ALLOWED_IMPORTS = {"argparse", "os", "random", "time", "pathlib", "kornia", "kornia.augmentation", "numpy", "torch",
                   # A CPU run keeps the memory it frees for the next batch (keep_freed_memory: mallopt), and
                   # runs its first steps on the images' uint8 levels with OpenCV (kornia_modules/levels.py).
                   "ctypes", "cv2",
                   "PIL", "torch.utils.data", "torch.utils.data.distributed",
                   # The training loader's GPU decoders (imported on the CUDA path only) and its PIL
                   # fallback for bytes a GPU decoder refuses.
                   "nvidia", "torchvision.io", "io",
                   # WebDataset tar shards (--shards): the loader lists the members of each tar (read only).
                   "tarfile",
                   # torch_compile=True warns once when torch.compile cannot run and goes on without it.
                   "warnings",
                   # The targets section: --coco reads a COCO JSON file; the maps use math's trigonometry.
                   "json", "math",
                   # The workbench's modules keep the arguments they were built with (RecordsArguments binds
                   # them to the constructor's signature), so that Chain.from_kornia reads them back.
                   "functools", "inspect",
                   # --decode-ahead: one thread decodes the next batch on the GPU (GpuDecodingLoader); a CPU
                   # batch's levels shared out to threads (kornia_modules/threads.py).
                   "concurrent.futures", "threading", "contextlib",
                   # A file that cannot be decoded: what PIL raises for it (DECODE_ERRORS).
                   "zlib", "struct",
                   # The parent's garbage collected, the rest frozen, before DataLoader workers fork (forking_cleanly).
                   "gc"}
KORNIA_MODULES = {name for spec in REGISTRY.values() if spec.kornia is not None
                  for name in (spec.kornia.module, *spec.kornia.local_modules())}
FORBIDDEN_NAMES = {"eval", "exec", "compile", "__import__", "breakpoint", "globals", "locals", "vars"}
FORBIDDEN_ATTRS = {"system", "popen", "spawnl", "execv", "check_output", "check_call", "Popen", "__globals__",
                   "__builtins__", "__subclasses__"}


def _expected_kwargs(step) -> dict:
    kwargs = dict(step.spec.kornia.args(step.params))
    if not step.spec.kornia.module.startswith("auto."):  # policies (kornia.augmentation.auto) take no p
        kwargs["p"] = float(step.p)
    return _plain(kwargs)


# Each distinct block of an export is walked once (export_ast.py); every block of every export is
# still checked.
@functools.lru_cache(maxsize=8192)
def _clean_block(text: str, imports: frozenset[str]) -> None:
    for node in ast.walk(ast.Module(body=list(block_body(text)), type_ignores=[])):
        if isinstance(node, ast.Import):
            for alias in node.names:
                assert alias.name in imports, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module in imports, f"from {node.module} import ..."
        elif isinstance(node, ast.Name):
            assert node.id not in FORBIDDEN_NAMES, node.id
        elif isinstance(node, ast.Attribute):
            assert node.attr not in FORBIDDEN_ATTRS, node.attr


def assert_only_allowed_imports_and_names(src: str, imports) -> None:
    """Every import in `src` is one of `imports`; no forbidden name or attribute appears anywhere."""
    for text in blocks(src):
        _clean_block(text, frozenset(imports))


def check_exported_source(chain: wb.Chain, src: str) -> None:
    tree = parse_export(src)
    assert_only_allowed_imports_and_names(src, ALLOWED_IMPORTS)

    builders = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "build_augmentation"]
    assert len(builders) == 1
    body = [n for n in builders[0].body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    assert len(body) == 1 and isinstance(body[0], ast.Return), ast.dump(builders[0])
    seq = body[0].value
    assert isinstance(seq, ast.Call) and ast.unparse(seq.func) == "torch.nn.Sequential" and not seq.keywords
    enabled = chain.enabled_steps()
    assert len(seq.args) == len(enabled)
    for call, (_, step) in zip(seq.args, enabled):
        assert isinstance(call, ast.Call), ast.dump(call)
        func = call.func
        module, local = step.spec.kornia.module_for(step.params)
        if local:  # the workbench's own module, defined in the file itself
            assert isinstance(func, ast.Name) and func.id == module
            assert func.id in {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        else:
            # K.<module>, or K.auto.<policy>: a chain of plain names only.
            assert isinstance(func, ast.Attribute) and ast.unparse(func).startswith("K.")
            module = ast.unparse(func)[2:]
            assert all(piece.isidentifier() for piece in module.split("."))
            assert module in KORNIA_MODULES and module == step.spec.kornia.module
        assert not call.args, "positional arguments in a module call"
        got = {}
        for kw in call.keywords:
            assert kw.arg is not None and kw.arg.isidentifier() and not keyword.iskeyword(kw.arg)
            got[kw.arg] = ast.literal_eval(kw.value)
        assert got == _expected_kwargs(step)

    assigned = {n.targets[0].id: n.value for n in tree.body
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}
    assert ast.literal_eval(assigned["SEED"]) == chain.seed
    assert ast.literal_eval(assigned["STEPS"]) == tuple((s.op, i) for i, s in enabled)
    assert isinstance(ast.literal_eval(assigned["HEAD_STEPS"]), int)


def _random_step(spec, rng) -> dict:
    p = 1.0 if spec.always_applies else round(float(rng.uniform(0, 1)), 3)
    return {"op": spec.name, "params": {prm.name: prm.random(rng) for prm in spec.params}, "p": p,
            "enabled": bool(rng.integers(4))}


def _random_chain_dict(k: int, backend: str = "kornia") -> dict:
    rng = np.random.default_rng(k)
    names = [name for name, spec in REGISTRY.items() if spec.supports(backend)]
    order = rng.permutation(len(names))[: int(rng.integers(1, len(names) + 1))]
    steps = [_random_step(REGISTRY[names[j]], rng) for j in order]
    steps[0]["enabled"] = True
    return {"seed": int(rng.integers(0, MAX_SEED)), "steps": steps}


@pytest.mark.parametrize("op, k", [pytest.param(op, k, id=f"{op}-rng{k}") for op in REGISTRY
                                   if REGISTRY[op].supports("kornia") for k in range(3)])
def test_export_of_each_op_with_random_valid_params_is_safe(op, k):
    rng = np.random.default_rng(k)
    step = _random_step(REGISTRY[op], rng)
    step["enabled"] = True
    chain = wb.Chain.from_dict({"seed": k, "steps": [step]})
    check_exported_source(chain, chain.export("kornia"))


@pytest.mark.parametrize("k", range(24), ids=lambda k: f"rng{k}")
def test_export_of_random_valid_chains_is_safe(k):
    chain = wb.Chain.from_dict(_random_chain_dict(k))
    check_exported_source(chain, chain.export("kornia"))


def _evil_params(spec, make_float, make_int) -> dict:
    """The op's defaults, each number replaced by an equal-valued hostile number."""
    out = {}
    for prm in spec.params:
        default = spec.defaults()[prm.name]
        if isinstance(prm, Number):
            out[prm.name] = make_int(default) if prm.integer else make_float(default)
        elif isinstance(prm, Size):
            out[prm.name] = EvilList(make_int(v) for v in default)
        elif isinstance(prm, (Range, Floats)):
            out[prm.name] = EvilList(make_float(v) for v in default)
    return out


NUMERIC_OPS = [op for op, s in REGISTRY.items()
               if any(isinstance(p, (Number, Range, Size, Floats)) for p in s.params)]
DALI_NUMERIC_OPS = [op for op in NUMERIC_OPS if REGISTRY[op].supports("dali")]
KORNIA_NUMERIC_OPS = [op for op in NUMERIC_OPS if REGISTRY[op].supports("kornia")]
ALBUMENTATIONS_NUMERIC_OPS = [op for op in NUMERIC_OPS if REGISTRY[op].supports("albumentations")]


@pytest.mark.parametrize("make", ["float-subclass", "real-subclass"])
@pytest.mark.parametrize("op", ALBUMENTATIONS_NUMERIC_OPS)
def test_albumentations_export_never_shows_a_malicious_repr(op, make):
    spec = REGISTRY[op]
    evil = (EvilFloat, EvilInt) if make == "float-subclass" else (lambda v: evil_real(float(v)),) * 2
    params = _evil_params(spec, *evil)
    chain = wb.Chain.from_dict({"seed": EvilInt(9), "steps": [{"op": op, "params": params, "p": 1.0}]})
    src = chain.export("albumentations")
    assert MALICIOUS not in src and "pwned" not in src
    tree = parse_export(src)
    compose = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "build_compose")
    calls = [ast.unparse(n.func) for n in ast.walk(compose) if isinstance(n, ast.Call)]
    # Only Albumentations transforms, the export's own subclasses of them (defined in the file:
    # the triangle-filter resizes; and subclasses of those: WbMixUp of WbBatchMixing) and the
    # checked literals they take, inside the Compose.
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    own: set[str] = set()
    for _ in classes:
        own |= {n.name for n in classes if all(ast.unparse(b).startswith("A.") or ast.unparse(b) in own
                                               for b in n.bases)}
    assert calls[0] == "A.Compose" and all(c.startswith("A.") or c == "dict" or c in own for c in calls), calls


@pytest.mark.parametrize("make", ["float-subclass", "real-subclass"])
@pytest.mark.parametrize("op", KORNIA_NUMERIC_OPS)
def test_valid_numbers_with_malicious_repr_never_reach_the_source(op, make):
    spec = REGISTRY[op]
    if make == "float-subclass":
        params = _evil_params(spec, EvilFloat, EvilInt)
    else:
        params = _evil_params(spec, lambda v: evil_real(float(v)), lambda v: evil_real(float(v)))
    p = EvilFloat(1.0) if make == "float-subclass" else evil_real(1.0)
    chain = wb.Chain.from_dict({"seed": EvilInt(9), "steps": [{"op": op, "params": params, "p": p}]})
    # Validation normalised every value to a plain type with the same value.
    assert chain.to_dict()["steps"][0]["params"] == spec.defaults()
    _assert_plain_types(chain.to_dict()["steps"][0]["params"])
    assert type(chain.steps[0].p) is float and chain.steps[0].p == 1.0
    src = chain.export("kornia")
    assert MALICIOUS not in src and "pwned" not in src
    check_exported_source(chain, src)
    # The builder API and direct edits (re-validated on export) normalise too.
    built = wb.Chain(seed=9).add(op, p=1.0, **params)
    assert MALICIOUS not in built.export("kornia") and built.to_dict() == chain.to_dict()
    edited = wb.Chain(seed=9)
    edited.steps.append(Step(op=op, params=params, p=p))
    assert MALICIOUS not in edited.export("kornia") and edited.to_dict() == chain.to_dict()


@pytest.mark.parametrize("cls", [EvilStr, ShapeShiftingStr], ids=["str-subclass-evil-repr", "str-subclass-eq-anything"])
@pytest.mark.parametrize("op, prm", [pytest.param(op, prm, id=f"{op}.{prm.name}")
                                     for op, _, prm in _spec_params() if isinstance(prm, Choice)])
def test_choice_given_as_a_str_subclass_never_reaches_the_source(op, prm, cls):
    value = cls(prm.options[-1])
    try:
        chain = wb.Chain.from_dict({"seed": 1, "steps": [{"op": op, "params": {prm.name: value}}]})
    except wb.ChainError as exc:  # refusing it is fine
        assert f"parameter '{prm.name}'" in str(exc)
        return
    stored = chain.steps[0].params[prm.name]
    assert type(stored) is str and stored in prm.options, f"validation kept a {type(stored).__name__}"
    src = chain.export("kornia")
    assert MALICIOUS not in src and "pwned" not in src


def test_describe_and_comments_stay_single_line_for_every_op():
    # Comments carry each step's describe(); it must never add a line of code.
    chain = wb.Chain.from_dict(_random_chain_dict(99))
    src = chain.export("kornia")
    for i, step in enumerate(chain.steps):
        line = literals.comment(f"  {i + 1}. {step.describe()}")
        # One comment line (the export may break it over several, each a comment: codegen/layout.py).
        assert ast.parse(line).body == [] and "\n" not in line and line[1:].strip() in comment_text(src)


@pytest.mark.parametrize("bad_step, fragment", [
    (Step(op="HorizontalFlip; import os"), "unknown op 'HorizontalFlip; import os'"),
    (Step(op="Rotate", params={"degrees": "__import__('os')"}), "step 2 (Rotate): parameter 'degrees'"),
    (Step(op="Rotate", params={"degrees": [0.0, 1.0], "evil": 1}), "step 2 (Rotate): unknown parameter 'evil'"),
    (Step(op="Rotate", p=EvilFloat("nan")), "step 2 (Rotate): p must be a number in [0, 1]"),
    (Step(op="Rotate", params={"interpolation": CODE_STRING}), "step 2 (Rotate): parameter 'interpolation'"),
    (Step(op="Rotate", enabled="yes"), "step 2 (Rotate): 'enabled' must be true or false"),
], ids=["op-name", "param-string", "unknown-param", "p-nan", "choice-code", "enabled"])
def test_export_revalidates_steps_edited_in_place(tmp_path, bad_step, fragment):
    chain = wb.Chain(seed=1).add("VerticalFlip")
    chain.steps.append(bad_step)
    with pytest.raises(wb.ChainError) as info:
        chain.export("kornia", path="aug.py", folder=tmp_path)
    assert fragment in str(info.value)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------
# 3. codegen.literals
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, fragment", [
    (float("nan"), "non-finite number nan"),
    (float("inf"), "non-finite number inf"),
    (float("-inf"), "non-finite number -inf"),
    (1e309, "non-finite number inf"),
    (EvilFloat("nan"), "non-finite number"),
    ([1.0, float("nan")], "non-finite number nan"),
    ((1, (2, float("inf"))), "non-finite number inf"),
    ({1, 2}, "type set"),
    (frozenset({1}), "type frozenset"),
    ({"a": float("nan")}, "non-finite number nan"),
    ([{"a": object()}], "type object"),
    ({EvilObject(): 1}, "type EvilObject"),
    (object(), "type object"),
    (EvilObject(), "type EvilObject"),
    (b"bytes", "type bytes"),
    (1 + 2j, "type complex"),
    (np.array([1.0]), "type ndarray"),
    (evil_real(0.5), "type EvilReal"),
], ids=["nan", "inf", "-inf", "1e309", "float-subclass-nan", "nan-in-list", "inf-in-nested-tuple", "set",
        "frozenset", "nan-in-dict", "object-in-dict", "evil-key", "object", "evil-object", "bytes", "complex",
        "ndarray", "real-subclass"])
def test_literal_refuses(value, fragment):
    with pytest.raises(wb.ExportError) as info:
        literals.literal(value)
    assert "cannot write" in str(info.value) and fragment in str(info.value), str(info.value)


@pytest.mark.parametrize("value, expected", [
    (None, None), (True, True), (False, False), (0, 0), (-5, -5), (10**30, 10**30), (0.1, 0.1), (-0.0, -0.0),
    (1e-300, 1e-300), (1.7976931348623157e308, 1.7976931348623157e308),
    ("it's \"quoted\"\n\\", "it's \"quoted\"\n\\"), (CODE_STRING, CODE_STRING), ("\x00\u2028", "\x00\u2028"),
    ((), ()), ((1,), (1,)), ((0.5, 1.0), (0.5, 1.0)), ([1, [2, (3,)]], [1, [2, (3,)]]),
    (EvilFloat(0.5), 0.5), (EvilInt(3), 3), (EvilStr("nearest"), "nearest"), (EvilList([1, 2]), [1, 2]),
    (np.float64(0.25), 0.25), ((EvilFloat(1.0), EvilInt(2)), (1.0, 2)),
    ({"a": [1, 2.5], EvilStr("b"): {"c": None}}, {"a": [1, 2.5], "b": {"c": None}}),
], ids=["None", "True", "False", "0", "-5", "big-int", "0.1", "-0.0", "tiny", "max-float", "quotes-newline",
        "code-string", "control-chars", "empty-tuple", "1-tuple", "pair", "nested", "evil-float", "evil-int",
        "evil-str", "evil-list", "numpy-float", "evil-tuple", "dict"])
def test_literal_renders_exact_plain_values(value, expected):
    text = literals.literal(value)
    assert MALICIOUS not in text
    assert ast.literal_eval(text) == expected and type(ast.literal_eval(text)) is type(expected)
    assert isinstance(ast.parse(text, mode="eval").body, (ast.Constant, ast.Tuple, ast.List, ast.UnaryOp, ast.Dict))
    if isinstance(expected, float):
        assert math.copysign(1.0, ast.literal_eval(text)) == math.copysign(1.0, expected)


@pytest.mark.parametrize("name", ["class", "None", "True", "lambda", "import", "os.system", "K.RandomRotation",
                                  "a b", "", "1x", "x-y", "x\n", "x;y", "__import__('os')", "x=1", 5, None,
                                  EvilObject()],
                         ids=["class", "None", "True", "lambda", "import", "dotted", "dotted-K", "space", "empty",
                              "digit", "dash", "newline", "semicolon", "call", "assign", "int", "NoneType", "object"])
def test_identifier_refuses(name):
    with pytest.raises(wb.ExportError) as info:
        literals.identifier(name)
    assert f"{name!r} is not a safe Python name" in str(info.value)


@pytest.mark.parametrize("name", ["RandomRotation", "_private", "K", "x1"])
def test_identifier_accepts_plain_names(name):
    assert literals.identifier(name) == name


@pytest.mark.parametrize("text", [
    "step 1\nimport os", "a\rimport os", "a\r\nb", "x\x00y", "x\x0bimport os", "x\x0cimport os",
    "x\u2028import os", "x\u2029y", "x\x85y", "x\x1b[31m", "", "trailing\\", '"""', "# nested", "\n\n\n",
    "tab\there", "x\x1cimport os", "x\x1dy\x1ez",
], ids=["LF", "CR", "CRLF", "NUL", "VT", "FF", "LS", "PS", "NEL", "ESC", "empty", "backslash", "triple-quote",
        "hash", "only-newlines", "tab", "FS", "GS-RS"])
def test_comment_is_one_line_and_only_a_comment(text):
    line = literals.comment(text)
    assert line == "# " + "".join(ch if ch.isprintable() else " " for ch in text)
    assert line.startswith("# ") and len(line.splitlines()) == 1
    assert all(ch.isprintable() for ch in line)
    assert ast.parse(line).body == []
    # Between two statements it neither swallows nor adds code.
    module = ast.parse("x = 1\n" + line + "\ny = 2\n")
    assert [ast.unparse(s) for s in module.body] == ["x = 1", "y = 2"]


def test_comment_of_an_object_with_a_multiline_str():
    class Multi:
        def __str__(self):
            return "ok\nimport os\r\nos.system('x')"

    line = literals.comment(Multi())
    assert line == "# ok import os  os.system('x')" and ast.parse(line).body == []


@pytest.mark.parametrize("func, kwargs", [
    ("K.RandomRotation", {"p=1, x": 1}),
    ("K.RandomRotation", {"__import__('os')": 1}),
    ("K.RandomRotation", {"class": 1}),
    ("K.Random Rotation", {"p": 1.0}),
    ("K.RandomRotation(); import os; K.X", {"p": 1.0}),
    ("K..RandomRotation", {"p": 1.0}),
    ("K.RandomRotation", {"degrees": float("nan")}),
    ("K.RandomRotation", {"degrees": {"a": object()}}),
], ids=["kw-injection", "kw-call", "kw-keyword", "func-space", "func-injection", "func-empty-piece", "value-nan",
        "value-dict-of-object"])
def test_call_refuses_unsafe_names_and_values(func, kwargs):
    with pytest.raises(wb.ExportError) as info:
        literals.call(func, kwargs)
    assert "is not a safe Python name" in str(info.value) or "cannot write" in str(info.value)


def test_call_renders_literal_keywords():
    text = literals.call("K.RandomRotation", {"degrees": (EvilFloat(-1.0), 2.0), "resample": ReprOnlyStr("BILINEAR"),
                                              "p": EvilFloat(0.5)})
    assert text == "K.RandomRotation(degrees=(-1.0, 2.0), resample='BILINEAR', p=0.5)"
    node = ast.parse(text, mode="eval").body
    assert {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords} == {
        "degrees": (-1.0, 2.0), "resample": "BILINEAR", "p": 0.5}


# ---------------------------------------------------------------------------------------
# 4. Export paths
# ---------------------------------------------------------------------------------------
@pytest.fixture
def export_dirs(tmp_path):
    box = tmp_path / "box"
    outside = tmp_path / "outside"
    box.mkdir()
    outside.mkdir()
    (outside / "target.py").write_text("ORIGINAL = True\n")
    os.symlink(outside, box / "link")
    os.symlink(outside / "target.py", box / "aug_link.py")
    os.symlink(outside / "new.py", box / "dangling.py")
    return tmp_path, box, outside


@pytest.fixture
def small_chain():
    return wb.Chain.from_dict({"seed": 4, "steps": [{"op": "Rotate", "params": {"degrees": [-5, 5]}},
                                                    {"op": "HorizontalFlip"}]})


ESCAPES = [
    ("../x.py", "parent"),
    ("sub/../../x.py", "dotdot-after-sub"),
    ("link/x.py", "symlinked-dir"),
    ("aug_link.py", "symlinked-file"),
    ("dangling.py", "dangling-symlink"),
    ("link/../../x.py", "link-then-dotdot"),
    ("./../outside/x.py", "sibling"),
]


@pytest.mark.parametrize("path", [pytest.param(p, id=i) for p, i in ESCAPES] + [pytest.param(None, id="absolute")])
def test_export_path_cannot_escape_its_folder(export_dirs, small_chain, path):
    root, box, outside = export_dirs
    if path is None:
        path = str(outside / "x.py")
    before = _files_under(root)
    with pytest.raises(wb.ExportError) as info:
        small_chain.export("kornia", path=path, folder=box)
    assert f"refusing to write {path!r}: it resolves outside the folder {box.resolve()}" in str(info.value)
    assert _files_under(root) == before
    assert (outside / "target.py").read_text() == "ORIGINAL = True\n"


@pytest.mark.parametrize("path", ["x.txt", "x.py.txt", "x", "x.pyc", "x.PY", "sub/x.sh", ".", ""],
                         ids=["txt", "py-txt", "no-suffix", "pyc", "upper-PY", "sh", "dot", "empty"])
def test_export_path_must_be_a_py_file(export_dirs, small_chain, path):
    root, box, _ = export_dirs
    before = _files_under(root)
    with pytest.raises(wb.ExportError) as info:
        small_chain.export("kornia", path=path, folder=box)
    assert f"give a path ending in .py, got {path!r}" in str(info.value)
    assert _files_under(root) == before


def test_export_writes_inside_the_folder(export_dirs, small_chain):
    root, box, outside = export_dirs
    before = _files_under(root)
    src = small_chain.export("kornia", path="sub/dir/aug.py", folder=box)
    written = box / "sub" / "dir" / "aug.py"
    assert written.read_text(encoding="utf-8") == src == small_chain.export("kornia")
    check_exported_source(small_chain, written.read_text(encoding="utf-8"))
    after = _files_under(root)
    assert set(after) - set(before) == {"box/sub", "box/sub/dir", "box/sub/dir/aug.py"}
    # An absolute path that stays inside the folder is fine too.
    src2 = small_chain.export("kornia", path=str(box / "abs.py"), folder=box)
    assert (box / "abs.py").read_text(encoding="utf-8") == src2


def test_the_api_writes_where_its_user_says(export_dirs, small_chain, monkeypatch, tmp_path_factory):
    """A path given to the API is the user's own: absolute or relative to the current folder,
    anywhere, missing folders created; only replacing a file needs overwrite=True."""
    root, box, _ = export_dirs
    monkeypatch.chdir(box)
    src = small_chain.export("kornia", path="ok.py")
    assert (box / "ok.py").read_text(encoding="utf-8") == src
    (root / "sibling").mkdir()
    assert small_chain.export("dali", path="../sibling/up.py") == (root / "sibling" / "up.py").read_text()
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "deep" / "er" / "aug.py"
    assert small_chain.export("kornia", path=str(elsewhere)) == elsewhere.read_text(encoding="utf-8")
    before = _files_under(root), elsewhere.read_text(encoding="utf-8")
    small_chain.seed = 99
    for path in (elsewhere, "ok.py"):
        with pytest.raises(wb.ExportError, match=r"refusing to replace .*: it exists; pass overwrite=True"):
            small_chain.export("kornia", path=path)
    assert (_files_under(root), elsewhere.read_text(encoding="utf-8")) == before
    assert "SEED = 99" in small_chain.export("kornia", path=elsewhere, overwrite=True)
    assert "SEED = 99" in elsewhere.read_text(encoding="utf-8")
    with pytest.raises(wb.ExportError, match=r"is a folder; give a file name ending in .py"):
        (box / "pkg.py").mkdir()
        small_chain.export("kornia", path="pkg.py", overwrite=True)


def test_a_folder_given_keeps_untrusted_paths_inside_it(export_dirs, small_chain, monkeypatch):
    root, box, _ = export_dirs
    monkeypatch.chdir(root)
    before = _files_under(root)
    with pytest.raises(wb.ExportError, match="resolves outside the folder"):
        small_chain.export("kornia", path="../x.py", folder=box)
    assert _files_under(root) == before


def test_invalid_chain_writes_nothing(export_dirs, small_chain):
    root, box, _ = export_dirs
    small_chain.steps[0].params["degrees"] = [5.0, -5.0]
    before = _files_under(root)
    with pytest.raises(wb.ChainError, match=r"step 1 \(Rotate\): parameter 'degrees' has lo > hi"):
        small_chain.export("kornia", path="aug.py", folder=box)
    assert _files_under(root) == before


# ---------------------------------------------------------------------------------------
# 5. Hostile YAML / JSON / files
# ---------------------------------------------------------------------------------------
def _tag_payloads(pwned: Path) -> list:
    cmd = f"touch {pwned}"
    return [
        pytest.param(f'!!python/object/apply:os.system ["{cmd}"]', id="apply-os.system"),
        pytest.param(f'steps: [{{op: !!python/object/apply:os.system ["{cmd}"]}}]', id="apply-in-op"),
        pytest.param(f'seed: !!python/object/apply:os.system ["{cmd}"]\nsteps: [{{op: Rotate}}]', id="apply-in-seed"),
        pytest.param(f'!!python/object/new:os.system ["{cmd}"]', id="new-os.system"),
        pytest.param(f'!!python/object/apply:subprocess.check_output [["touch", "{pwned}"]]', id="subprocess"),
        pytest.param("!!python/name:os.system", id="name"),
        pytest.param("!!python/module:os", id="module"),
        pytest.param("!!python/object:workbench.Chain {seed: 1}", id="object"),
        pytest.param(f'!python/object/apply:os.system ["{cmd}"]', id="local-tag"),
        pytest.param(f'steps: !!python/object/apply:builtins.eval ["open(\'{pwned}\', \'w\')"]', id="eval"),
    ]


# Parametrize with a fixed marker path, rewritten per test to a tmp_path file.
_MARK = "/PWNED_MARKER"


@pytest.mark.parametrize("text", _tag_payloads(Path(_MARK)))
def test_yaml_python_tags_are_refused_without_side_effects(tmp_path, text):
    pwned = tmp_path / "pwned"
    text = text.replace(_MARK, str(pwned))
    with pytest.raises(wb.ChainError) as info:
        wb.Chain.from_yaml(text)
    assert "the YAML uses a tag that is not allowed in a chain file" in str(info.value)
    # Same through a file.
    (tmp_path / "chain.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(wb.ChainError, match="tag that is not allowed"):
        wb.Chain.load(tmp_path / "chain.yaml")
    assert not pwned.exists()


@pytest.mark.parametrize("text, fragment", [
    ("- HorizontalFlip\n- Rotate", "a chain must be a mapping with 'seed' and 'steps', got list"),
    ("hello", "a chain must be a mapping with 'seed' and 'steps', got str"),
    ("42", "a chain must be a mapping with 'seed' and 'steps', got int"),
    ("", "a chain must be a mapping with 'seed' and 'steps', got NoneType"),
    ("---\nseed: 1\n---\nseed: 2", "the chain is not valid YAML"),
    ("steps: [", "the chain is not valid YAML"),
    ("seed: 1\n\x00", "the chain is not valid YAML"),
    ("steps: [{op: Rotate, p: .nan}]", "step 1 (Rotate): p must be a number in [0, 1]"),
    ("steps: [{op: Rotate, params: {degrees: [-.inf, 1]}}]", "step 1 (Rotate): parameter 'degrees' must be finite"),
    ("steps: [{op: !!binary SG9yaXpvbnRhbEZsaXA=}]", "step 1: 'op' must be an op name"),
    ("steps: !!set {a, b}", "'steps' must be a list of steps, got set"),
    ("seed: 2001-01-01\nsteps: [{op: Rotate}]", "seed must be an integer"),
    ("format: other/thing\nsteps: [{op: Rotate}]", f"'format' must be {FORMAT_NAME!r}, got 'other/thing'"),
    ("version: 999\nsteps: [{op: Rotate}]", "chain format version 999 is not supported"),
    ("version: '1'\nsteps: [{op: Rotate}]", "chain format version '1' is not supported"),
    ("version: 1.0\nsteps: [{op: Rotate}]", "chain format version 1.0 is not supported"),
    ("version: 0\nsteps: [{op: Rotate}]", "chain format version 0 is not supported"),
    ("version: true\nsteps: [{op: Rotate}]", "chain format version True is not supported"),
    ("steps: [{op: Rotate}]\n? [a, b]\n: 1", "unhashable key"),
    ("steps: [{op: Rotate, params: {degrees: 1e400}}]", "parameter 'degrees' must be a pair"),
], ids=["list", "string", "number", "empty", "two-documents", "truncated", "nul", "nan-p", "inf-param", "binary-op",
        "set-steps", "date-seed", "format", "version-999", "version-string", "version-float", "version-0",
        "version-bool", "unhashable-key", "float-string"])
def test_malformed_yaml_is_a_chain_error(text, fragment):
    with pytest.raises(wb.ChainError) as info:
        wb.Chain.from_yaml(text)
    assert fragment in str(info.value), str(info.value)


@pytest.mark.parametrize("text, fragment", [
    ('{"steps": [{"op": "Rotate", "params": {"degrees": [NaN, 1]}}]}', "JSON contains NaN"),
    ('{"steps": [{"op": "Rotate", "params": {"degrees": [-Infinity, 1]}}]}', "JSON contains -Infinity"),
    ('{"steps": [{"op": "Rotate", "p": Infinity}]}', "JSON contains Infinity"),
    ('{"steps": [{"op": "Rotate", "params": {"degrees": [-1e999, 1]}}]}', "parameter 'degrees' must be finite"),
    ('{"seed": 1, "steps": [', "the chain is not valid JSON"),
    ('{"seed": 1, "steps": [{"op": "Rotate"}]', "the chain is not valid JSON"),
    ("", "the chain is not valid JSON"),
    ("'single quotes'", "the chain is not valid JSON"),
    ('["HorizontalFlip"]', "a chain must be a mapping with 'seed' and 'steps', got list"),
    ('"HorizontalFlip"', "a chain must be a mapping with 'seed' and 'steps', got str"),
    ("7", "a chain must be a mapping with 'seed' and 'steps', got int"),
    ("null", "a chain must be a mapping with 'seed' and 'steps', got NoneType"),
    ('{"format": "other", "steps": [{"op": "Rotate"}]}', f"'format' must be {FORMAT_NAME!r}, got 'other'"),
    ('{"version": 999, "steps": [{"op": "Rotate"}]}', "chain format version 999 is not supported"),
    ('{"version": "1", "steps": [{"op": "Rotate"}]}', "chain format version '1' is not supported"),
    ('{"seed": %s, "steps": [{"op": "Rotate"}]}' % ("9" * 5000), "the chain is not valid JSON"),
    ("[" * 10_000 + "]" * 10_000, "the chain is not valid JSON"),
    ('{"steps": [{"op": "Rotate", "params": {"degrees": [1, %s]}}]}' % ("[" * 500 + "]" * 500),
     "step 1 (Rotate): parameter 'degrees' must be a number"),
], ids=["NaN", "-Infinity", "Infinity", "1e999", "truncated", "unclosed", "empty", "single-quotes", "top-list",
        "top-string", "top-number", "null", "format", "version-999", "version-string", "5000-digit-int",
        "deep-10000", "deep-500-in-param"])
def test_malformed_json_is_a_chain_error(text, fragment):
    with pytest.raises(wb.ChainError) as info:
        wb.Chain.from_json(text)
    assert fragment in str(info.value), str(info.value)[:500]


def test_deeply_nested_yaml_is_a_chain_error(tmp_path):
    deep = "[" * 10_000 + "]" * 10_000
    with pytest.raises(wb.ChainError, match="the chain is not valid YAML"):
        wb.Chain.from_yaml("steps: " + deep)
    (tmp_path / "deep.yml").write_text(deep)
    with pytest.raises(wb.ChainError, match="the chain is not valid YAML"):
        wb.Chain.load(tmp_path / "deep.yml")


def test_billion_laughs_as_steps_fails_fast():
    bomb = _alias_bomb(9, 9)  # 9**9 = 387 million leaves if expanded
    start = time.monotonic()
    with pytest.raises(wb.ChainError) as info:
        wb.Chain.from_yaml("seed: 1\nsteps: " + bomb)
    assert "step 1: must be a mapping with 'op' and 'params', got list" in str(info.value)
    assert time.monotonic() - start < 15  # generous guard: expansion would take minutes and gigabytes


@pytest.mark.parametrize("template, fragment", [
    ("seed: %s\nsteps: [{op: Rotate}]", "seed must be an integer"),
    ("version: %s\nsteps: [{op: Rotate}]", "chain format version"),
    ("format: %s\nsteps: [{op: Rotate}]", "'format' must be"),
    ("steps: [{op: %s}]", "step 1: 'op' must be an op name"),
    ("steps: [{op: Rotate, p: %s}]", "step 1 (Rotate): p must be a number"),
    ("steps: [{op: Rotate, enabled: %s}]", "step 1 (Rotate): 'enabled' must be true or false"),
    ("steps: [{op: Rotate, params: {degrees: %s}}]", "step 1 (Rotate): parameter 'degrees'"),
    ("steps: [{op: Rotate, params: {interpolation: %s}}]", "step 1 (Rotate): parameter 'interpolation'"),
], ids=["seed", "version", "format", "op", "p", "enabled", "range-param", "choice-param"])
def test_alias_bomb_in_a_value_gives_a_short_message(template, fragment):
    # 2**20 leaves: small enough to finish here, but the message must not expand the aliases
    # (a 9**9 bomb in the same place would need gigabytes to print).
    with pytest.raises(wb.ChainError) as info:
        wb.Chain.from_yaml(template % _alias_bomb(20, 2))
    msg = str(info.value)
    assert fragment in msg, msg[:300]
    assert len(msg) < 10_000, f"message of {len(msg)} characters"


def test_file_over_the_size_limit_is_refused_before_parsing(tmp_path):
    good = wb.Chain(seed=1).add("Rotate").to_yaml()
    for name, filler in (("big.yaml", "#" + "x" * 99 + "\n"), ("big.json", " " * 100)):
        path = tmp_path / name
        text = good + filler * (MAX_FILE_BYTES // 100 + 1) if name.endswith("yaml") else \
            wb.Chain(seed=1).add("Rotate").to_json() + filler * (MAX_FILE_BYTES // 100 + 1)
        path.write_text(text)
        size = path.stat().st_size
        assert size > MAX_FILE_BYTES
        with pytest.raises(wb.ChainError) as info:
            wb.Chain.load(path)
        assert f"is {size} bytes; a chain file is at most {MAX_FILE_BYTES} bytes" in str(info.value)


@pytest.mark.parametrize("name", ["chain.txt", "chain.py", "chain.yaml.bak", "chain", ".yaml", "chain.pickle"])
def test_load_and_save_refuse_other_extensions(tmp_path, name):
    path = tmp_path / name
    path.write_text(wb.Chain(seed=1).add("Rotate").to_yaml())
    with pytest.raises(wb.ChainError) as info:
        wb.Chain.load(path)
    assert f"chain files end in .yaml, .yml or .json, got {str(path)!r}" in str(info.value)
    (tmp_path / "saved").mkdir()
    other = tmp_path / "saved" / name
    with pytest.raises(wb.ChainError, match="chain files end in .yaml, .yml or .json"):
        wb.Chain(seed=1).add("Rotate").save(other)
    assert not other.exists()


def test_load_missing_file_is_a_chain_error(tmp_path):
    with pytest.raises(wb.ChainError) as info:
        wb.Chain.load(tmp_path / "missing.json")
    assert "cannot read chain file" in str(info.value) and "missing.json" in str(info.value)


def test_load_directory_named_like_a_chain_is_a_chain_error(tmp_path):
    (tmp_path / "chain.yaml").mkdir()
    with pytest.raises(wb.ChainError) as info:
        wb.Chain.load(tmp_path / "chain.yaml")
    assert "chain.yaml" in str(info.value)


def test_load_json_file_with_nan_is_refused(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"seed": 1, "steps": [{"op": "Rotate", "p": NaN}]}')
    with pytest.raises(wb.ChainError, match="JSON contains NaN"):
        wb.Chain.load(path)


# ---------------------------------------------------------------------------------------
# 6. Guarantee 5: a failure loses nothing
# ---------------------------------------------------------------------------------------
@pytest.fixture
def user_chain():
    return wb.Chain.from_dict({"seed": 11, "steps": [
        {"op": "RandomResizedCrop", "params": {"size": [64, 48], "scale": [0.5, 1.0]}},
        {"op": "Rotate", "p": 0.7, "params": {"degrees": [-20, 20], "interpolation": "nearest"}},
        {"op": "Brightness", "enabled": False, "params": {"factor": [0.7, 1.3]}},
        {"op": "Normalize"}]})


@pytest.mark.parametrize("args, kwargs, fragment", [
    (("Rotat",), {}, "unknown op 'Rotat'"),
    (("HorizontalFlip; import os",), {}, "unknown op"),
    ((None,), {}, "unknown op None"),
    (("Rotate",), {"angle": [1, 2]}, "unknown parameter 'angle'"),
    (("Rotate",), {"degrees": [20, -20]}, "has lo > hi"),
    (("Rotate",), {"degrees": CODE_STRING}, "parameter 'degrees'"),
    (("Rotate",), {"degrees": [float("nan"), 1]}, "must be finite"),
    (("Rotate",), {"p": 2}, "p must be a number in [0, 1]"),
    (("Rotate",), {"p": True}, "p must be a number in [0, 1]"),
    (("Resize",), {"p": 0.5}, "p must be 1.0"),
    (("Rotate",), {"enabled": "yes"}, "'enabled' must be true or false"),
    (("Rotate",), {"interpolation": CODE_STRING}, "must be one of ['bilinear', 'nearest']"),
    (("GaussianBlur",), {"kernel_size": 4}, "odd integer"),
], ids=["typo", "injection", "None", "unknown-param", "reversed", "code-string", "nan", "p-2", "p-True",
        "resize-p", "enabled", "choice", "even-kernel"])
def test_failed_add_leaves_the_chain_unchanged(user_chain, args, kwargs, fragment):
    before = copy.deepcopy(user_chain.to_dict())
    steps_before = list(user_chain.steps)
    with pytest.raises(wb.ChainError) as info:
        user_chain.add(*args, **kwargs)
    assert fragment in str(info.value), str(info.value)
    assert user_chain.to_dict() == before
    assert len(user_chain.steps) == len(steps_before) and all(a is b for a, b in zip(user_chain.steps, steps_before))
    assert user_chain.export("kornia") == wb.Chain.from_dict(before).export("kornia")


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: d["steps"].append({"op": "Rotate", "p": 5}), "step 5 (Rotate): p must be a number"),
    (lambda d: d["steps"][1]["params"].update(degrees=[1, float("nan")]), "step 2 (Rotate): parameter 'degrees'"),
    (lambda d: d.update(seed=-1), "seed must be an integer"),
    (lambda d: d.update(version=999), "version 999 is not supported"),
    (lambda d: d["steps"][0].update(op="RandomResizedCrop\nimport os"), "unknown op"),
    (lambda d: d.update(extra=True), "unknown chain key(s) ['extra']"),
], ids=["bad-p", "nan-param", "seed", "version", "op-injection", "unknown-key"])
def test_failed_from_dict_leaves_the_chain_and_the_input_unchanged(user_chain, mutate, fragment):
    before = copy.deepcopy(user_chain.to_dict())
    data = user_chain.to_dict()
    mutate(data)
    data_before = copy.deepcopy(data)
    with pytest.raises(wb.ChainError) as info:
        wb.Chain.from_dict(data)
    assert fragment in str(info.value), str(info.value)
    assert user_chain.to_dict() == before
    assert json.dumps(data, sort_keys=True) == json.dumps(data_before, sort_keys=True)


def test_failed_validate_keeps_the_users_edits(user_chain):
    before = copy.deepcopy(user_chain.to_dict())
    steps_before = list(user_chain.steps)
    user_chain.steps[1].p = 5
    with pytest.raises(wb.ChainError, match=r"step 2 \(Rotate\): p must be a number in \[0, 1\], got 5"):
        user_chain.validate()
    with pytest.raises(wb.ChainError, match=r"step 2 \(Rotate\): p must be a number"):
        user_chain.export("kornia")
    assert all(a is b for a, b in zip(user_chain.steps, steps_before)) and len(user_chain.steps) == 4
    user_chain.steps[1].p = 0.7  # the user fixes the value: everything else is still there
    assert user_chain.validate().to_dict() == before


def test_failed_export_or_load_leaves_the_chain_unchanged(user_chain, tmp_path):
    before = copy.deepcopy(user_chain.to_dict())
    with pytest.raises(wb.ExportError):
        user_chain.export("kornia", path="../escape.py", folder=tmp_path)
    with pytest.raises(wb.ChainError):
        user_chain.export("dali; import os")
    (tmp_path / "bad.yaml").write_text("!!python/name:os.system")
    with pytest.raises(wb.ChainError):
        user_chain = wb.Chain.load(tmp_path / "bad.yaml") or user_chain
    assert user_chain.to_dict() == before


# ---------------------------------------------------------------------------------------
# DALI exports: the same guarantees for the pipeline source
# ---------------------------------------------------------------------------------------
DALI_IMPORTS = {"argparse", "os", "time", "pathlib", "numpy", "nvidia.dali.fn", "nvidia.dali.math",
                "nvidia.dali.types", "nvidia.dali", "PIL", "nvidia.dali.plugin.base_iterator",
                "nvidia.dali.plugin.pytorch", "torch", "nvidia.dali.auto_aug", "nvidia.dali.auto_aug.core",
                # WebDataset tar shards (--shards): the tars' members listed (read only), --save decoding
                # them from memory, and fn.readers.webdataset's index files in a temporary folder.
                "tarfile", "io", "tempfile",
                # The targets section: --coco reads a COCO JSON file; the maps use math's trigonometry.
                "json", "math",
                # do_not_convert: step functions without control flow skip DALI's autograph.
                "nvidia.dali.pipeline",
                # A file that cannot be decoded: what PIL raises for it (DECODE_ERRORS), the file DALI's
                # error names (dali_failure), and --skip-bad's full decode ahead on processes (check_files).
                "zlib", "struct", "re", "concurrent.futures"}
# Layouts, border policies and the rules of drawn sizes (drawn_size's, constants of the specs).
DALI_STRINGS = {"HWC", "HW", "reflect_101", "reflect_1001", "edge", "wrap", "shortest", "resize", "jitter",
                "gaussian", "uniform",  # ElasticTransform's noise_distribution choices
                "nearest", "bilinear"}  # the torchvision policies' interpolation


def check_dali_source(chain: wb.Chain, src: str) -> None:
    tree = parse_export(src)
    assert_only_allowed_imports_and_names(src, DALI_IMPORTS)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("step_")]
    assert len(functions) == len(chain.enabled_steps())
    # The policy helpers (runtime/dali_policies.py, and dali_tv_policies.py's tv_policy_* for torchvision's
    # policies) for RandAugment & co., the DALI functions of
    # runtime/dali_ops/, auto_aug's select, the batch-mixing label helper, DALI's constant nodes and
    # range (in a sorting network).
    helpers = {"select", "mix_labels", "types.Constant", "range"} | {
        n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith(("policy_", "tv_policy_"))}
    helpers |= set(definitions(tuple(map(str, DALI_OPS))))
    for function in functions:
        local = {"images", "seed", "fn", "dmath", "types", "np", "op_seed", "range", "mix_labels",
                 "do_not_convert"} | helpers  # (the decorator of straight-line step functions)
        local |= {a.arg for a in function.args.args}
        for node in ast.walk(function):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.comprehension) else []
            for target in targets:
                local |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
            if isinstance(node, ast.FunctionDef) and node is not function:  # a step-local helper
                local |= {node.name} | {a.arg for a in node.args.args}
        for node in ast.walk(function):
            if isinstance(node, ast.Call):
                func = ast.unparse(node.func)
                # fn./dmath. operators, the template's helpers, or a step-local helper (s3_round).
                assert func.startswith(("fn.", "dmath.", "np.")) or func in ("images.shape", "op_seed", *helpers) or \
                    (func in local and func.startswith(f"s{function.name.split('_')[1]}_")), func
            elif isinstance(node, ast.Name):
                assert node.id in local, f"unknown name {node.id} in {function.name}"
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert node.value in DALI_STRINGS, node.value
    assigned = {n.targets[0].id: n.value for n in tree.body
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}
    assert ast.literal_eval(assigned["SEED"]) == chain.seed
    draws = ast.literal_eval(assigned["DRAWS"])
    assert all(d.split(".")[0].split("_", 1)[1] in REGISTRY for d in draws)


@pytest.mark.parametrize("k", range(24), ids=lambda k: f"rng{k}")
def test_dali_export_of_random_valid_chains_is_safe(k):
    chain = wb.Chain.from_dict(_random_chain_dict(k, "dali"))
    check_dali_source(chain, chain.export("dali"))


@pytest.mark.parametrize("make", ["float-subclass", "real-subclass"])
@pytest.mark.parametrize("op", DALI_NUMERIC_OPS)
def test_dali_export_never_shows_a_malicious_repr(op, make):
    spec = REGISTRY[op]
    if make == "float-subclass":
        params = _evil_params(spec, EvilFloat, EvilInt)
    else:
        params = _evil_params(spec, lambda v: evil_real(float(v)), lambda v: evil_real(float(v)))
    chain = wb.Chain.from_dict({"seed": EvilInt(9), "steps": [{"op": op, "params": params, "p": 0.5 if not
                                                                spec.always_applies else 1.0}]})
    src = chain.export("dali")
    assert MALICIOUS not in src and "pwned" not in src
    check_dali_source(chain, src)


@pytest.mark.parametrize("cls", [EvilStr, ShapeShiftingStr], ids=["str-subclass-evil-repr", "str-subclass-eq-anything"])
@pytest.mark.parametrize("op, prm", [pytest.param(op, prm, id=f"{op}.{prm.name}")
                                     for op, spec, prm in _spec_params()
                                     if isinstance(prm, Choice) and spec.supports("dali")])
def test_dali_export_never_shows_a_str_subclass(op, prm, cls):
    try:
        chain = wb.Chain.from_dict({"seed": 1, "steps": [{"op": op, "params": {prm.name: cls(prm.options[-1])}}]})
    except wb.ChainError:
        return
    src = chain.export("dali")
    assert MALICIOUS not in src and "pwned" not in src
