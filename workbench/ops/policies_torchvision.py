"""torchvision's augmentation policies (v2.RandAugment, v2.TrivialAugmentWide, v2.AutoAugment) as chain
steps, in torchvision's own semantics: TorchvisionRandAugment, TorchvisionTrivialAugmentWide and
TorchvisionAutoAugment. (RandAugment, TrivialAugment and AutoAugment in ops/policies.py are Kornia's.)

torchvision draws per image: its 14 ops (identity included; AutoAugment's sub-policies add invert), each
at a magnitude tabulated in bins (runtime/torchvision_policy_space.py), the signed ones with a random
sign; and its ops are PIL's: brightness, color and contrast blend with black, the grey image and its
mean; shears turn about the top-left corner; translations move by whole pixels; resampling is nearest
by default; everything on uint8, truncating. Every backend runs those ops (Kornia: torch, in
runtime/kornia_modules/torchvision_policy_ops.py; Albumentations: numpy and OpenCV, in
runtime/torchvision_policy_ops.py; DALI: its operators, in runtime/dali_tv_policies.py), and
tests/test_torchvision_policies.py compares each with torchvision itself. All report per sample the
`ops` that ran and their `magnitudes`, as the Kornia policies do (shears in degrees, translations in
pixels, the factor 1 + m, posterize bits, the solarize threshold in [0, 1]).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..literals import literal
from ..runtime import targets
from ..runtime.torchvision_policy_ops import wb_tv_policy_op
from ..runtime.torchvision_policy_space import (TV_SPACE_FACTORS, TV_SPACE_OPS, TV_SPACE_SIGNED, TV_SPACE_TOPS,
                                                tv_space_reported, tv_space_sub_policies, tv_space_value)
from .dali_helpers import RandomOp
from .params import Choice, Number, policy_draws
from .policies import AUTO_AUGMENT_POLICIES, _functions, _index, _on_uint8, _PolicyName, _REPORTS, _uniform01
from .spec import AlbumentationsLowering, DaliLowering, Inverse, KorniaLowering, OpSpec, Parity, TargetRule
from . import kornia_reading as kr
from . import torchvision_reading as tv

INTERPOLATIONS = ("nearest", "bilinear")
# RandAugment's bins: its magnitude m is bin m of 31 (torchvision's default num_magnitude_bins).
RAND_BINS = 31
# AutoAugment's bins: its sub-policies name bins of 10.
AUTO_BINS = 10


class _Interpolation(Choice):
    """The resampling of rotate, shear and translate; names the ops a RandAugment or TrivialAugmentWide
    sample drew (by position in torchvision's op list)."""

    def readable_draws(self, row: dict[str, Any], value: str) -> None:
        policy_draws(row, [[name] for name in TV_SPACE_OPS])


def _interpolation() -> _Interpolation:
    return _Interpolation("interpolation", "resampling of rotate, shear and translate (torchvision's default: "
                          "nearest); uncovered pixels are 0", "nearest", options=INTERPOLATIONS)


def _auto_interpolation() -> Choice:
    return Choice("interpolation", "resampling of rotate, shear and translate (torchvision's default: nearest); "
                  "uncovered pixels are 0", "nearest", options=INTERPOLATIONS)


def sub_policies(policy: str) -> tuple:
    """AutoAugment's sub-policies for `policy`, as the runtime classes take them: (op, probability, bin or
    None) stages (torchvision's tables, which Kornia's are too: tests/test_torchvision_policies.py).

    Example:
        >>> sub_policies("imagenet")[0]
        (('posterize', 0.4, 8), ('rotate', 0.6, 9))
    """
    return tv_space_sub_policies(AUTO_AUGMENT_POLICIES[policy])


def _op_names(a) -> dict[str, list]:
    """The op names each candidate stands for, by position (see ops/policies.py)."""
    if "policy" in a:
        return {"op_names": [[stage[0] for stage in sub] for sub in AUTO_AUGMENT_POLICIES[a["policy"]]]}
    return {"op_names": [[name] for name in TV_SPACE_OPS]}


_TARGETS = TargetRule(geometry=targets.torchvision_policy, plan_params=_op_names)
_P_WHY = "a policy's own draws decide which ops each image gets, as torchvision's policies have no p"


# ---------------------------------------------------------------------------------------
# The parity reference: a sample's reported ops at their magnitudes, through the NumPy ops (which
# tests/test_torchvision_policies.py holds to torchvision's own pixels)
# ---------------------------------------------------------------------------------------
def apply_reported(image, row, interpolation="nearest") -> np.ndarray:
    """The uint8 HWC `image` through `row["ops"]` at `row["magnitudes"]` in torchvision's semantics;
    float HWC in [0, 1]."""
    levels = np.ascontiguousarray(image)
    for name, magnitude in zip(row["ops"], row["magnitudes"]):
        levels = wb_tv_policy_op(levels, name, np.nan if magnitude is None else float(magnitude), interpolation)
    return levels.astype(np.float64) / 255.0


# ---------------------------------------------------------------------------------------
# DALI lowering: the tv_policy_* ops of runtime/dali_tv_policies.py under auto_aug's select, and
# tv_policy_magnitude, which computes each sample's magnitude from a table as the space does
# ---------------------------------------------------------------------------------------
def magnitude_row(space: str, name: str, magnitude_bin: int | None, bins: int) -> list[float]:
    """One row of a tv_policy_magnitude table: base, delta, signed, axis (0: none, 1: the width, 2: the
    height), share, index, from_end, bins - 1, has a magnitude. The reported magnitude is base + sign x
    delta, where a translation of RandAugment's space takes as delta int(linspace(0, share x side,
    bins)[index]) (from_end: torch counts that index back from the end); NaN without a magnitude.

    Example:
        >>> magnitude_row("rand", "brightness", 9, 31)[:3]
        [1.0, 0.26999998092651367, 1.0]
    """
    signed = 1.0 if name in TV_SPACE_SIGNED else 0.0
    if magnitude_bin is None or tv_space_value(space, name, 0, bins, 1, 1) is None:  # no magnitude
        return [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, float(bins - 1), 0.0]
    if space == "rand" and name in ("translate_x", "translate_y"):
        axis = 1.0 if name == "translate_x" else 2.0
        from_end = magnitude_bin >= bins // 2
        index = float(bins - 1 - magnitude_bin) if from_end else float(magnitude_bin)
        return [0.0, 0.0, signed, axis, TV_SPACE_TOPS["rand"][name], index, float(from_end), float(bins - 1), 1.0]
    value = tv_space_reported(space, name, magnitude_bin, bins, 1, 1)
    if name in TV_SPACE_FACTORS:
        base, delta = 1.0, value - 1.0
    elif name in TV_SPACE_SIGNED:
        base, delta = 0.0, value
    else:
        base, delta = value, 0.0
    return [base, delta, signed, 0.0, 0.0, 0.0, 0.0, float(bins - 1), 1.0]


def _select(c, ops, choice, magnitude, interpolation: str) -> str:
    return f"{c.x} = select({ops}, {choice}, {c.x}, {magnitude}, interpolation={literal(interpolation)})"


def _rand_augment_dali(a, c, d) -> list[str]:
    v = c.var
    table = [magnitude_row("rand", name, a["magnitude"], RAND_BINS) for name in TV_SPACE_OPS]
    lines = [f"{v('functions')} = {_functions(TV_SPACE_OPS, 'tv_policy_')}", f"{v('table')} = {literal(table)}"]
    for level in range(a["num_ops"]):
        k = level + 1
        lines += [f"{v(f'magnitude_{k}')} = tv_policy_magnitude({c.x}, {d['_ops']}[{level}], {v('table')}, "
                  f"{d['_coins']}[{level}])",
                  _select(c, v("functions"), f"{d['_ops']}[{level}]", v(f"magnitude_{k}"), a["interpolation"])]
    lines.append(f"{', '.join(v(r) for r in _REPORTS)} = policy_reports({d['_ops']}, "
                 f"{literal([v(f'magnitude_{k + 1}') for k in range(a['num_ops'])])})")
    return _on_uint8(c, lines)


def _trivial_augment_dali(a, c, d) -> list[str]:
    v = c.var
    bins = a["num_magnitude_bins"]
    table = [magnitude_row("wide", name, b, bins) for name in TV_SPACE_OPS for b in range(bins)]
    lines = [f"{v('functions')} = {_functions(TV_SPACE_OPS, 'tv_policy_')}", f"{v('table')} = {literal(table)}",
             f"{v('magnitude')} = tv_policy_magnitude({c.x}, {d['_op']} * {bins} + {d['_bin']}, {v('table')}, "
             f"{d['_coin']})",
             _select(c, v("functions"), d["_op"], v("magnitude"), a["interpolation"]),
             f"{', '.join(v(r) for r in _REPORTS)} = policy_reports({literal([d['_op']])}, "
             f"{literal([v('magnitude')])})"]
    return _on_uint8(c, lines)


def _auto_augment_dali(a, c, d) -> list[str]:
    v = c.var
    subs = sub_policies(a["policy"])
    stages = max(len(sub) for sub in subs)
    used = [name for name in TV_SPACE_OPS + ("invert",) if any(stage[0] == name for sub in subs for stage in sub)]
    rows = [magnitude_row("rand", sub[j][0], sub[j][2], AUTO_BINS) for sub in subs for j in range(stages)]
    lines = [f"{v('functions')} = {_functions(used, 'tv_policy_')}",
             f"{v('table')} = {literal(rows)}"]
    for j in range(stages):
        k = j + 1
        lines += [f"{v(f'op_{k}')} = policy_lookup({literal([used.index(sub[j][0]) for sub in subs])}, "
                  f"{d['_subpolicy']})",
                  f"{v(f'applied_{k}')} = {d['_gates']}[{j}] <= policy_lookup({literal([sub[j][1] for sub in subs])}, "
                  f"{d['_subpolicy']})",
                  f"{v(f'magnitude_{k}')} = tv_policy_magnitude({c.x}, {d['_subpolicy']} * {stages} + {j}, "
                  f"{v('table')}, {d['_coins']}[{j}])",
                  f"if {v(f'applied_{k}')}:",
                  "    " + _select(c, v("functions"), v(f"op_{k}"), v(f"magnitude_{k}"), a["interpolation"])]
    lines.append(f"{', '.join(v(r) for r in _REPORTS)} = policy_reports({literal([d['_subpolicy']])}, "
                 f"{literal([v(f'magnitude_{j + 1}') for j in range(stages)])}, "
                 f"applied={literal([v(f'applied_{j + 1}') for j in range(stages)])})")
    return _on_uint8(c, lines)


def _coins(count: int | None = None) -> RandomOp:
    return RandomOp("fn.random.coin_flip", {"shape": (count,)} if count else {})


# ---------------------------------------------------------------------------------------
# Importing torchvision's transforms, and reading the Kornia export's modules back
# ---------------------------------------------------------------------------------------
def _tv_interpolation(t, op: str) -> str:
    mode = str(getattr(t.interpolation, "value", t.interpolation)).lower()
    if mode not in INTERPOLATIONS:
        raise ValueError(f"interpolation={mode.upper()}: {op} resamples 'nearest' (torchvision's default) or "
                         "'bilinear'")
    tv.zero_fill(t, op)
    return mode


def _tv_rand_augment(t, notes):
    interpolation = _tv_interpolation(t, "TorchvisionRandAugment")
    if not 1 <= t.num_ops <= 4:
        raise ValueError(f"num_ops={t.num_ops}: TorchvisionRandAugment applies 1 to 4 ops per image")
    bins, magnitude = int(t.num_magnitude_bins), int(t.magnitude)
    if not 0 <= magnitude < bins:
        raise ValueError(f"magnitude={magnitude}: torchvision takes a bin in 0..{bins - 1} of "
                         f"num_magnitude_bins={bins}")
    position = magnitude * (RAND_BINS - 1) / (bins - 1) if bins > 1 else 0.0
    if not float(position).is_integer():
        raise ValueError(f"magnitude={magnitude} of num_magnitude_bins={bins} is {magnitude}/{bins - 1} of each range, "
                         f"which no bin of torchvision's default 31 is; TorchvisionRandAugment keeps 31 bins")
    return {"num_ops": int(t.num_ops), "magnitude": int(position), "interpolation": interpolation}


def _tv_trivial_augment(t, notes):
    return {"num_magnitude_bins": int(t.num_magnitude_bins),
            "interpolation": _tv_interpolation(t, "TorchvisionTrivialAugmentWide")}


def _tv_auto_augment(t, notes):
    policy = str(getattr(t.policy, "value", t.policy)).lower()
    if policy not in AUTO_AUGMENT_POLICIES:
        raise ValueError(f"policy={policy!r}: TorchvisionAutoAugment runs 'imagenet', 'cifar10' or 'svhn'")
    return {"policy": policy, "interpolation": _tv_interpolation(t, "TorchvisionAutoAugment")}


def _wb_auto_augment(built, notes):
    """TorchvisionAutoAugment's params from WbTorchvisionAutoAugment's arguments: the policy whose
    sub-policies it was built with."""
    built_subs = kr.plain(built["sub_policies"])
    for name in AUTO_AUGMENT_POLICIES:
        if kr.plain(sub_policies(name)) == built_subs:
            return {"policy": name, "interpolation": str(built["interpolation"])}
    raise ValueError("sub_policies= is not one of torchvision's 'imagenet', 'cifar10' or 'svhn' policies")


# ---------------------------------------------------------------------------------------
# The op specs
# ---------------------------------------------------------------------------------------
_NOTE = ("picks per image as torchvision does, and runs torchvision's ops on the 8-bit levels (a float image "
         "after a Normalize is taken as levels / 255)")


# Measured 2026-11-27: chain.run on the CPU of the development machine, median of 3 runs after a warm-up,
# 64 sample photos at 224 x 224, TorchvisionRandAugment with num_ops=2.
_COST = ("Each image runs its own ops, one after the other, on every backend. DALI builds torchvision's exact "
         "resampling and equalize out of its operators: 1.9 s for 64 images of 224 x 224 on the CPU (Kornia 0.08 s, "
         "Albumentations 0.11 s), and equalize holds a 256-byte one-hot of every pixel value.")


def _kornia(module: str, args, from_module) -> KorniaLowering:
    return KorniaLowering(module, args, local=True, from_module=from_module)


def _albumentations(transform: str, args) -> AlbumentationsLowering:
    return AlbumentationsLowering(transform, args, record={name: name for name in _REPORTS}, note=_NOTE)


# The runtime classes' arguments (the Kornia modules and the Albumentations transforms take the same).
def _rand_args(a) -> dict[str, Any]:
    return {"num_ops": a["num_ops"], "magnitude": a["magnitude"], "interpolation": a["interpolation"]}


def _wide_args(a) -> dict[str, Any]:
    return {"num_magnitude_bins": a["num_magnitude_bins"], "interpolation": a["interpolation"]}


def _auto_args(a) -> dict[str, Any]:
    return {"sub_policies": sub_policies(a["policy"]), "interpolation": a["interpolation"]}


def _parity(params) -> Parity:
    # Measured on the sample photos: every backend gives the reference's pixels at its own draws.
    return Parity(border=2, mae=0.1 / 255, psnr=60.0, params=params,
                  reference=lambda image, row: apply_reported(image, row, params.get("interpolation", "nearest")))


TORCHVISION_RAND_AUGMENT = OpSpec(
    name="TorchvisionRandAugment", family="policies", targets=_TARGETS, always_applies=True,
    always_applies_why=_P_WHY, from_torchvision=Inverse("RandAugment", _tv_rand_augment),
    doc="torchvision's RandAugment: num_ops ops per image, drawn with replacement from its 14 (identity "
        "included), each at bin `magnitude` of 31 of its range, with a random sign; PIL's ops as torchvision "
        "runs them on uint8 images.",
    params=(Number("num_ops", "ops applied to each image (drawn with replacement)", 2, lo=1, hi=4, integer=True),
            Number("magnitude", "the bin of 31 every op uses (0: no change, 30: the strongest)", 9, lo=0, hi=30,
                   integer=True),
            _interpolation()),
    kornia=_kornia("WbTorchvisionRandAugment", _rand_args, kr.arguments("num_ops", "magnitude", "interpolation")),
    dali=DaliLowering(
        draws=lambda a: {"_ops": _index(len(TV_SPACE_OPS), (a["num_ops"],)), "_coins": _coins(a["num_ops"])},
        apply=_rand_augment_dali, reports=_REPORTS, note=_NOTE),
    albumentations=_albumentations("WbTorchvisionRandAugment", _rand_args),
    parity=_parity({"num_ops": 1, "magnitude": 12}),
    cost_hint=_COST + " Fewer ops per image (num_ops) cost less.",
)

TORCHVISION_TRIVIAL_AUGMENT_WIDE = OpSpec(
    name="TorchvisionTrivialAugmentWide", family="policies", targets=_TARGETS, always_applies=True,
    always_applies_why=_P_WHY, from_torchvision=Inverse("TrivialAugmentWide", _tv_trivial_augment),
    doc="torchvision's TrivialAugmentWide: one op per image of its 14 (identity included) at a bin drawn "
        "uniformly of num_magnitude_bins, with a random sign; PIL's ops as torchvision runs them on uint8 images.",
    params=(Number("num_magnitude_bins", "how many magnitudes each op's range is cut into", 31, lo=2, hi=256,
                   integer=True),
            _interpolation()),
    kornia=_kornia("WbTorchvisionTrivialAugmentWide", _wide_args, kr.arguments("num_magnitude_bins", "interpolation")),
    dali=DaliLowering(
        draws=lambda a: {"_op": _index(len(TV_SPACE_OPS)), "_bin": _index(a["num_magnitude_bins"]), "_coin": _coins()},
        apply=_trivial_augment_dali, reports=_REPORTS, note=_NOTE),
    albumentations=_albumentations("WbTorchvisionTrivialAugmentWide", _wide_args),
    parity=_parity({"num_magnitude_bins": 31}),
    cost_hint=_COST,
)

TORCHVISION_AUTO_AUGMENT = OpSpec(
    name="TorchvisionAutoAugment", family="policies", targets=_TARGETS, always_applies=True,
    always_applies_why=_P_WHY, from_torchvision=Inverse("AutoAugment", _tv_auto_augment),
    doc="torchvision's AutoAugment: one of the paper's learned sub-policies per image, each of its two ops run "
        "with its probability at its bin of 10, with a random sign; PIL's ops as torchvision runs them on uint8 "
        "images.",
    params=(_PolicyName("policy", "the learned policy: its sub-policies", "imagenet",
                        options=tuple(AUTO_AUGMENT_POLICIES)),
            _auto_interpolation()),
    kornia=_kornia("WbTorchvisionAutoAugment", _auto_args, _wb_auto_augment),
    dali=DaliLowering(
        draws=lambda a: {"_subpolicy": _index(len(AUTO_AUGMENT_POLICIES[a["policy"]])),
                         "_gates": _uniform01(shape=(2,)),
                         "_coins": _coins(2)},
        apply=_auto_augment_dali, reports=_REPORTS, note=_NOTE),
    albumentations=_albumentations("WbTorchvisionAutoAugment", _auto_args),
    parity=_parity({"policy": "imagenet"}),
    cost_hint=_COST,
)

OPS = (TORCHVISION_RAND_AUGMENT, TORCHVISION_TRIVIAL_AUGMENT_WIDE, TORCHVISION_AUTO_AUGMENT)
