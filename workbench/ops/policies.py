"""Augmentation policies (RandAugment, TrivialAugment, AutoAugment) as chain steps.

Kornia's `kornia.augmentation.auto` policies are the reference: the Kornia export builds them,
and the DALI export reproduces their conventions with DALI's auto_aug library (its ops where
they agree, and its `select`, which runs each sample through the op it drew under DALI's
conditional execution), and the Albumentations export carries the workbench's own transforms
(runtime/albumentations_policies.py: Kornia's ops in numpy and OpenCV). Magnitudes are in each
op's own unit (see `POLICY_OPS`). The ops work on 0-255 images: a policy belongs before
Normalize (after one it sees the values clamped to [0, 1] on DALI and Albumentations; most of
Kornia's ops clamp them too).

Kornia picks a policy's ops once per batch (every image of a batch gets the same op, with
its own magnitude and sign), DALI and Albumentations per sample; the ops themselves agree (see
the parity tolerances). All report per sample `ops` (the ops that ran, in order) and `magnitudes`.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..literals import Name, identifier, literal
from ..runtime import targets
from .dali_helpers import RandomOp
from .params import Choice, Number, OpRanges, PolicyOp, policy_draws
from .spec import AlbumentationsLowering, DaliLowering, KorniaLowering, OpSpec, Parity, TargetRule, Inverse
from . import kornia_reading as kr

# The ops both libraries have (Kornia's `rand_augment.ops`, DALI's auto_aug augmentations),
# in the order every backend numbers them. Left out: Kornia's solarize_add (it draws its
# threshold at random in (0, 1) instead of the documented 0.5) and DALI's identity (Kornia
# has none).
POLICY_OPS = (
    PolicyOp("rotate", -180.0, 180.0, True, (-30.0, 30.0), "degrees, counter-clockwise"),
    PolicyOp("shear_x", -80.0, 80.0, True, (-16.7, 16.7), "degrees"),
    PolicyOp("shear_y", -80.0, 80.0, True, (-16.7, 16.7), "degrees"),
    PolicyOp("translate_x", -1.0, 1.0, True, (-0.1, 0.1), "of the width (reported in pixels)"),
    PolicyOp("translate_y", -1.0, 1.0, True, (-0.1, 0.1), "of the height (reported in pixels)"),
    PolicyOp("brightness", 0.0, 2.0, False, (0.1, 1.9), "factor; adds factor - 1 to values in [0, 1]"),
    PolicyOp("contrast", 0.0, 10.0, False, (0.1, 1.9), "factor; multiplies values"),
    PolicyOp("color", 0.0, 10.0, False, (0.1, 1.9), "saturation factor (HSV)"),
    PolicyOp("sharpness", 0.0, 10.0, False, (0.1, 1.9), "factor; 0 blurs, 1 leaves unchanged"),
    PolicyOp("posterize", 0.0, 8.0, False, (4.0, 8.0), "bits kept, floored"),
    PolicyOp("solarize", 0.0, 1.0, False, (0.0, 1.0), "threshold; values at or above it are inverted"),
    PolicyOp("equalize"),
    PolicyOp("auto_contrast"),
    PolicyOp("invert"),
)
POLICY_OP_BY_NAME = {op.name: op for op in POLICY_OPS}


def _defaults(*names: str, **ranges: tuple[float, float]) -> dict[str, list[float]]:
    out = {}
    for name in names:
        op = POLICY_OP_BY_NAME[name]
        out[name] = list(ranges.get(name, op.default)) if op.has_magnitude else []
    return out


# Kornia's default candidates (solarize_add left out); shear as the papers' shear factor 0.3
# (16.7 degrees: Kornia's own default, 0.3, is multiplied by 180 into 54 degrees).
RAND_AUGMENT_OPS = _defaults("rotate", "shear_x", "shear_y", "translate_x", "translate_y", "brightness", "contrast",
                             "color", "sharpness", "posterize", "solarize", "equalize", "auto_contrast", "invert")
# Kornia's TrivialAugment candidates, with TrivialAugment-wide's posterize range (Kornia's
# [0, 4] can keep no bit at all, a black image) and its translation up to half the size.
TRIVIAL_AUGMENT_OPS = _defaults("rotate", "shear_x", "shear_y", "translate_x", "translate_y", "brightness",
                                "contrast", "sharpness", "posterize", "solarize", "equalize", "auto_contrast",
                                posterize=(2.0, 8.0), translate_x=(-0.5, 0.5), translate_y=(-0.5, 0.5))


# ---------------------------------------------------------------------------------------
# AutoAugment: the papers' learned sub-policies, as Kornia 0.9 tabulates them
# (kornia.augmentation.auto.autoaugment; tests check they stay equal): each sub-policy is
# two (op, probability, magnitude bin) entries; a bin b picks a magnitude uniformly between
# points b and b + 1 of the op's eleven-point scale below.
# ---------------------------------------------------------------------------------------
AUTO_AUGMENT_POLICIES: dict[str, tuple] = {
    "imagenet": (
        (("posterize", 0.4, 8), ("rotate", 0.6, 9)), (("solarize", 0.6, 5), ("auto_contrast", 0.6, None)),
        (("equalize", 0.8, None), ("equalize", 0.6, None)), (("posterize", 0.6, 7), ("posterize", 0.6, 6)),
        (("equalize", 0.4, None), ("solarize", 0.2, 4)), (("equalize", 0.4, None), ("rotate", 0.8, 8)),
        (("solarize", 0.6, 3), ("equalize", 0.6, None)), (("posterize", 0.8, 5), ("equalize", 1.0, None)),
        (("rotate", 0.2, 3), ("solarize", 0.6, 8)), (("equalize", 0.6, None), ("posterize", 0.4, 6)),
        (("rotate", 0.8, 8), ("color", 0.4, 0)), (("rotate", 0.4, 9), ("equalize", 0.6, None)),
        (("equalize", 0.0, None), ("equalize", 0.8, None)), (("invert", 0.6, None), ("equalize", 1.0, None)),
        (("color", 0.6, 4), ("contrast", 1.0, 8)), (("rotate", 0.8, 8), ("color", 1.0, 2)),
        (("color", 0.8, 8), ("solarize", 0.8, 7)), (("sharpness", 0.4, 7), ("invert", 0.6, None)),
        (("shear_x", 0.6, 5), ("equalize", 1.0, None)), (("color", 0.4, 0), ("equalize", 0.6, None)),
        (("equalize", 0.4, None), ("solarize", 0.2, 4)), (("solarize", 0.6, 5), ("auto_contrast", 0.6, None)),
        (("invert", 0.6, None), ("equalize", 1.0, None)), (("color", 0.6, 4), ("contrast", 1.0, 8)),
        (("equalize", 0.8, None), ("equalize", 0.6, None)),
    ),
    "cifar10": (
        (("invert", 0.1, None), ("contrast", 0.2, 6)), (("rotate", 0.7, 2), ("translate_x", 0.3, 9)),
        (("sharpness", 0.8, 1), ("sharpness", 0.9, 3)), (("shear_y", 0.5, 8), ("translate_y", 0.7, 9)),
        (("auto_contrast", 0.5, None), ("equalize", 0.9, None)), (("shear_y", 0.2, 7), ("posterize", 0.3, 7)),
        (("color", 0.4, 3), ("brightness", 0.6, 7)), (("sharpness", 0.3, 9), ("brightness", 0.7, 9)),
        (("equalize", 0.6, None), ("equalize", 0.5, None)), (("contrast", 0.6, 7), ("sharpness", 0.6, 5)),
        (("color", 0.7, 7), ("translate_x", 0.5, 8)), (("equalize", 0.3, None), ("auto_contrast", 0.4, None)),
        (("translate_y", 0.4, 3), ("sharpness", 0.2, 6)), (("brightness", 0.9, 6), ("color", 0.2, 8)),
        (("solarize", 0.5, 2), ("invert", 0.0, None)), (("equalize", 0.2, None), ("auto_contrast", 0.6, None)),
        (("equalize", 0.2, None), ("equalize", 0.6, None)), (("color", 0.9, 9), ("equalize", 0.6, None)),
        (("auto_contrast", 0.8, None), ("solarize", 0.2, 8)), (("brightness", 0.1, 3), ("color", 0.7, 0)),
        (("solarize", 0.4, 5), ("auto_contrast", 0.9, None)), (("translate_y", 0.9, 9), ("translate_y", 0.7, 9)),
        (("auto_contrast", 0.9, None), ("solarize", 0.8, 3)), (("equalize", 0.8, None), ("invert", 0.1, None)),
        (("translate_y", 0.7, 9), ("auto_contrast", 0.9, None)),
    ),
    "svhn": (
        (("shear_x", 0.9, 4), ("invert", 0.2, None)), (("shear_y", 0.9, 8), ("invert", 0.7, None)),
        (("equalize", 0.6, None), ("solarize", 0.6, 6)), (("invert", 0.9, None), ("equalize", 0.6, None)),
        (("equalize", 0.6, None), ("rotate", 0.9, 3)), (("shear_x", 0.9, 4), ("auto_contrast", 0.8, None)),
        (("shear_y", 0.9, 8), ("invert", 0.4, None)), (("shear_y", 0.9, 5), ("solarize", 0.2, 6)),
        (("invert", 0.9, None), ("auto_contrast", 0.8, None)), (("equalize", 0.6, None), ("rotate", 0.9, 3)),
        (("shear_x", 0.9, 4), ("solarize", 0.3, 3)), (("shear_y", 0.8, 8), ("invert", 0.7, None)),
        (("equalize", 0.9, None), ("translate_y", 0.6, 6)), (("invert", 0.9, None), ("equalize", 0.6, None)),
        (("contrast", 0.3, 3), ("rotate", 0.8, 4)), (("invert", 0.8, None), ("translate_y", 0.0, 2)),
        (("shear_y", 0.7, 6), ("solarize", 0.4, 8)), (("invert", 0.6, None), ("rotate", 0.8, 4)),
        (("shear_y", 0.3, 7), ("translate_x", 0.9, 3)), (("shear_x", 0.1, 6), ("invert", 0.6, None)),
        (("solarize", 0.7, 2), ("translate_y", 0.6, 7)), (("shear_y", 0.8, 4), ("invert", 0.8, None)),
        (("shear_x", 0.7, 9), ("translate_y", 0.8, 3)), (("shear_y", 0.8, 5), ("auto_contrast", 0.7, None)),
        (("shear_x", 0.7, 2), ("invert", 0.1, None)),
    ),
}
# Each op's eleven-point magnitude scale in AutoAugment (Kornia's, in this module's units:
# shear is Kornia's shear fraction times 180, in degrees; solarize is 0..255 / 255).
AUTO_AUGMENT_SCALES = {
    "shear_x": (-54.0, 54.0), "shear_y": (-54.0, 54.0), "translate_x": (-0.5, 0.5), "translate_y": (-0.5, 0.5),
    "rotate": (-30.0, 30.0), "solarize": (0.0, 1.0), "posterize": (4.0, 8.0), "contrast": (0.1, 1.9),
    "brightness": (0.1, 1.9), "sharpness": (0.1, 1.9), "color": (0.1, 1.9),
}


def auto_augment_bin(op: str, magnitude_bin: int) -> tuple[float, float]:
    """The magnitude interval AutoAugment's bin `magnitude_bin` selects for `op`.

    Example:
        >>> auto_augment_bin("rotate", 9)
        (24.0, 30.0)
    """
    lo, hi = AUTO_AUGMENT_SCALES[op]
    points = np.linspace(lo, hi, 11)
    return float(round(points[magnitude_bin], 6)), float(round(points[magnitude_bin + 1], 6))


def _op_names(a) -> dict[str, list]:
    """The op names each candidate of a policy step stands for, by position (the raw draws name
    candidates by position): a sub-policy's two ops, or one op of the set."""
    if "policy" in a:
        return {"op_names": [[entry[0] for entry in sub] for sub in AUTO_AUGMENT_POLICIES[a["policy"]]]}
    return {"op_names": [[name] for name in a["ops"]]}


class _PolicyName(Choice):
    """The AutoAugment policy's name; names the ops a sample's sub-policy ran."""

    def readable_draws(self, row: dict[str, Any], value: str) -> None:
        choice = row.get("policy_choice")
        if choice is not None:
            row["subpolicy"] = int(choice[0] if isinstance(choice, list) else choice)
        policy_draws(row, _op_names({"policy": value})["op_names"])


# ---------------------------------------------------------------------------------------
# Kornia lowering: kornia.augmentation.auto policies with a candidate list per op set
# ---------------------------------------------------------------------------------------
def _kornia_range(name: str, rng) -> tuple[float, float]:
    if not rng:
        return (0.0, 1.0)  # Kornia requires a range; ops without a magnitude ignore it
    lo, hi = float(rng[0]), float(rng[1])
    if name.startswith("shear"):
        return (lo / 180.0, hi / 180.0)  # Kornia multiplies a shear magnitude by 180 to get degrees
    return (lo, hi)


def _kornia_candidates(ops: Mapping[str, Any]) -> list:
    return [[(name, *_kornia_range(name, rng))] for name, rng in ops.items()]


def _ops_in_use(step_ops) -> int:
    return min(step_ops["n"], len(step_ops["ops"]))


# The per-sample report: which candidates (by position) were chosen, whether each of their
# ops ran and the magnitude it used; the workbench names them (`readable_draws`).
_REPORTS = ("policy_choice", "op_applied", "op_magnitude")


# ---------------------------------------------------------------------------------------
# DALI lowering: the policy_* helpers of runtime/dali_policies.py, which the export copies
# ---------------------------------------------------------------------------------------
def _f32(x) -> np.float32:
    return np.float32(x)


def _rand_augment_value(name: str, rng, m: int) -> float:
    """The magnitude Kornia's RandAugment gives op `name` at strength m (before its random
    sign), computed in float32 as Kornia does, so that floors and reports agree."""
    op = POLICY_OP_BY_NAME[name]
    lo, hi = _kornia_range(name, rng)
    if op.symmetric:
        lo = 0.0  # Kornia's symmetric ops run over (0, max) and draw a sign
    m32 = _f32(m / 30)
    if name in ("posterize", "translate_x", "translate_y"):
        span = _f32(hi - lo)  # Kornia keeps these ranges as Python floats
    else:
        span = _f32(_f32(hi) - _f32(lo))  # ... and the others as float32 tensors
    value = (_f32(1) - m32) * span + _f32(lo) if name == "posterize" else m32 * span + _f32(lo)
    if name.startswith("shear"):
        value = value * _f32(180)
    return float(value)


def _row(name: str, lo: float, hi: float, symmetric: bool) -> list[float]:
    """One row of a policy_magnitude table: low, high, symmetric, axis (0 none, 1 width,
    2 height), whole (floored), has a magnitude."""
    op = POLICY_OP_BY_NAME[name]
    axis = {"translate_x": 1.0, "translate_y": 2.0}.get(name, 0.0)
    if not op.has_magnitude:
        return [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    return [float(lo), float(hi), 1.0 if symmetric else 0.0, axis, 1.0 if name == "posterize" else 0.0, 1.0]


def _functions(names, prefix: str = "policy_") -> Name:
    """The tuple of the DALI functions (`prefix` + op name) a policy step selects among, by position."""
    return Name("(" + "".join(f"{prefix}{identifier(n)}, " for n in names) + ")")


def _on_uint8(c, lines: list[str]) -> list[str]:
    """The policy's statements, on uint8 images: after a Normalize the values are clamped to
    [0, 1] first, as Kornia's ops clamp them, and scaled back afterwards."""
    if c.scale == 255.0:
        return lines
    scale = literal(float(c.scale))
    return [f"{c.x} = policy_to_levels({c.x}, {scale})"] + lines + [f"{c.x} = policy_from_levels({c.x}, {scale})"]


def _reported(v) -> str:
    """The step-local variables the policy_reports line assigns: the per-sample reports (_REPORTS)."""
    return ", ".join(v(name) for name in _REPORTS)


def _dali_apply_ops(c, ops_var, choice, magnitude) -> str:
    return f"{c.x} = select({ops_var}, {choice}, {c.x}, {magnitude})"


def _rand_augment_dali(a, c, d) -> list[str]:
    return _on_uint8(c, _rand_augment_lines(a, c, d))


def _rand_augment_lines(a, c, d) -> list[str]:
    ops = list(a["ops"].items())
    count = _ops_in_use(a)
    v = c.var
    table = [_row(name, *(2 * [_rand_augment_value(name, rng, a["magnitude"])] if rng else (0, 0)),
                  POLICY_OP_BY_NAME[name].symmetric) for name, rng in ops]
    lines = [f"{v('ops')} = {_functions(name for name, _ in ops)}",
             f"{v('table')} = {literal(table)}",
             f"{v('choice')} = policy_pick({d['_keys']}, {len(ops)}, {count})"]
    for level in range(count):
        lines += [f"{v(f'magnitude_{level + 1}')} = policy_magnitude({c.x}, {v('choice')}[{level}], {v('table')}, "
                  f"0.0, {d['_coins']}[{level}])",
                  _dali_apply_ops(c, v("ops"), f"{v('choice')}[{level}]", v(f"magnitude_{level + 1}"))]
    lines.append(f"{_reported(v)} = policy_reports({v('choice')}, "
                 f"{literal([v(f'magnitude_{k + 1}') for k in range(count)])})")
    return lines


def _trivial_augment_dali(a, c, d) -> list[str]:
    return _on_uint8(c, _trivial_augment_lines(a, c, d))


def _trivial_augment_lines(a, c, d) -> list[str]:
    ops = list(a["ops"].items())
    v = c.var
    table = [_row(name, 0.0 if POLICY_OP_BY_NAME[name].symmetric else rng[0], rng[1], POLICY_OP_BY_NAME[name].symmetric)
             if rng else _row(name, 0, 0, False) for name, rng in ops]
    return [f"{v('ops')} = {_functions(name for name, _ in ops)}",
            f"{v('table')} = {literal(table)}",
            f"{v('magnitude')} = policy_magnitude({c.x}, {d['_op']}, {v('table')}, {d['_u']}, {d['_coin']})",
            _dali_apply_ops(c, v("ops"), d["_op"], v("magnitude")),
            f"{_reported(v)} = policy_reports({literal([d['_op']])}, {literal([v('magnitude')])})"]


def _auto_augment_parts(policy: str):
    """(ops in use, per stage the op index of each sub-policy, per stage each sub-policy's
    probability, magnitude table with one row per (sub-policy, stage))."""
    table = AUTO_AUGMENT_POLICIES[policy]
    used = [op.name for op in POLICY_OPS if any(e[0] == op.name for sub in table for e in sub)]
    stages = _stages(policy)
    op_at = [[used.index(sub[j][0]) if j < len(sub) else 0 for sub in table] for j in range(stages)]
    p_at = [[float(sub[j][1]) if j < len(sub) else 0.0 for sub in table] for j in range(stages)]
    rows = []
    for sub in table:
        for j in range(stages):
            name, _, magnitude_bin = sub[j] if j < len(sub) else (used[0], 0.0, None)
            rows.append(_row(name, *auto_augment_bin(name, magnitude_bin), False) if magnitude_bin is not None
                        and POLICY_OP_BY_NAME[name].has_magnitude else _row("invert", 0, 0, False))
    return used, op_at, p_at, rows


def _stages(policy: str) -> int:
    return max(len(sub) for sub in AUTO_AUGMENT_POLICIES[policy])


def _auto_augment_dali(a, c, d) -> list[str]:
    return _on_uint8(c, _auto_augment_lines(a, c, d))


def _auto_augment_lines(a, c, d) -> list[str]:
    used, op_at, p_at, rows = _auto_augment_parts(a["policy"])
    stages = len(op_at)
    v = c.var
    lines = [f"{v('ops')} = {_functions(used)}", f"{v('table')} = {literal(rows)}"]
    for j in range(stages):
        k = j + 1
        lines += [f"{v(f'op_{k}')} = policy_lookup({literal(op_at[j])}, {d['_subpolicy']})",
                  f"{v(f'applied_{k}')} = {d['_gates']}[{j}] < policy_lookup({literal(p_at[j])}, {d['_subpolicy']})",
                  f"{v(f'magnitude_{k}')} = policy_magnitude({c.x}, {d['_subpolicy']} * {stages} + {j}, "
                  f"{v('table')}, {d['_u']}[{j}])",
                  f"if {v(f'applied_{k}')}:",
                  "    " + _dali_apply_ops(c, v("ops"), v(f"op_{k}"), v(f"magnitude_{k}"))]
    lines.append(f"{_reported(v)} = policy_reports({literal([d['_subpolicy']])}, "
                 f"{literal([v(f'magnitude_{j + 1}') for j in range(stages)])}, "
                 f"applied={literal([v(f'applied_{j + 1}') for j in range(stages)])})")
    return lines


def _uniform01(**extra) -> RandomOp:
    return RandomOp("fn.random.uniform", {"range": (0.0, 1.0), **extra})


def _index(count: int, shape: tuple = ()) -> RandomOp:
    kwargs = {"values": list(range(count)), "dtype": Name("types.INT32")}
    return RandomOp("fn.random.uniform", {**kwargs, "shape": shape} if shape else kwargs)


# ---------------------------------------------------------------------------------------
# Albumentations lowering: the workbench's own transforms of runtime/albumentations_policies.py
# (WbRandAugment, WbTrivialAugment, WbAutoAugment), which the export copies; their arguments
# carry the magnitudes as the other lowerings compute them.
# ---------------------------------------------------------------------------------------
def _signed(ops) -> tuple[str, ...]:
    """The ops of a set drawn with a random sign."""
    return tuple(name for name in ops if POLICY_OP_BY_NAME[name].symmetric)


def _alb_rand_augment(a) -> dict[str, Any]:
    """WbRandAugment's arguments: each op's magnitude at strength `magnitude` (_rand_augment_value, in
    float32 as Kornia computes it; translations as fractions of the size)."""
    ops = {name: _rand_augment_value(name, rng, a["magnitude"]) if rng else None for name, rng in a["ops"].items()}
    return {"ops": ops, "n": _ops_in_use(a), "signed": _signed(a["ops"])}


def _alb_trivial_augment(a) -> dict[str, Any]:
    """WbTrivialAugment's arguments: each op's range, from 0 for the ops drawn with a sign."""
    ops = {name: [0.0 if POLICY_OP_BY_NAME[name].symmetric else float(rng[0]), float(rng[1])] if rng else None
           for name, rng in a["ops"].items()}
    return {"ops": ops, "signed": _signed(a["ops"])}


def _alb_auto_augment(a) -> dict[str, Any]:
    """WbAutoAugment's arguments: the policy's sub-policies with each magnitude bin as its interval."""
    return {"sub_policies": tuple(
        tuple((name, float(prob), list(auto_augment_bin(name, magnitude_bin))
               if magnitude_bin is not None and POLICY_OP_BY_NAME[name].has_magnitude else None)
              for name, prob, magnitude_bin in sub)
        for sub in AUTO_AUGMENT_POLICIES[a["policy"]])}


_ALB_NOTE = ("the export writes {transform}, the workbench's own transform (Albumentations 2.0.8 has no such "
             "policies); it picks per image, as DALI (Kornia picks once per batch), and runs Kornia's ops in "
             "float32, rounding to the image's levels once at the end (equalize is Kornia's, PIL's formula); "
             "rotate, shear and translate are resampled by OpenCV (its bilinear weights are in 1/32 pixel steps)")


def _albumentations(transform: str, args) -> AlbumentationsLowering:
    return AlbumentationsLowering(transform, args, record={name: name for name in _REPORTS},
                                  note=_ALB_NOTE.format(transform=transform))


# ---------------------------------------------------------------------------------------
# Parity reference: a sample's reported ops and magnitudes, applied one by one with Kornia's
# own augmentations (every backend is compared with it at its own draws)
# ---------------------------------------------------------------------------------------
def apply_reported(image, row) -> np.ndarray:
    """The uint8 HWC `image` with `row["ops"]` applied in order at `row["magnitudes"]`, in
    Kornia's conventions; float HWC in [0, 1]."""
    import os

    os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")
    import kornia.augmentation as K
    import kornia.enhance as E
    import torch

    x = torch.from_numpy(np.array(image)).permute(2, 0, 1)[None].float() / 255.0  # a copy: may be read-only
    height, width = x.shape[-2:]
    for name, m in zip(row["ops"], row["magnitudes"]):
        with torch.no_grad():
            if name == "rotate":
                x = K.RandomRotation((m, m), p=1.0, align_corners=True)(x)
            elif name == "shear_x":
                x = K.RandomShear((m, m, 0.0, 0.0), p=1.0, align_corners=True)(x)
            elif name == "shear_y":
                x = K.RandomShear((0.0, 0.0, m, m), p=1.0, align_corners=True)(x)
            elif name == "translate_x":
                x = K.RandomTranslate((m / width, m / width), None, p=1.0, align_corners=True)(x)
            elif name == "translate_y":
                x = K.RandomTranslate(None, (m / height, m / height), p=1.0, align_corners=True)(x)
            elif name == "brightness":
                x = E.adjust_brightness(x, m - 1.0)
            elif name == "contrast":
                x = E.adjust_contrast(x, m)
            elif name == "color":
                x = E.adjust_saturation(x, m).clamp(0.0, 1.0)
            elif name == "sharpness":
                x = E.sharpness(x, m)
            elif name == "posterize":
                x = E.posterize(x, torch.tensor(int(m)))
            elif name == "solarize":
                x = E.solarize(x, m)
            elif name == "equalize":
                x = E.equalize(x)
            elif name == "auto_contrast":
                x = K.RandomAutoContrast(p=1.0)(x)
            elif name == "invert":
                x = 1.0 - x
            else:  # pragma: no cover - the catalogue has no other op
                raise ValueError(name)
    return x[0].permute(1, 2, 0).numpy()


# ---------------------------------------------------------------------------------------
# The op specs
# ---------------------------------------------------------------------------------------
_DALI_NOTE = ("Kornia picks a policy's op (sub-policy) once per batch and applies it to every image, DALI picks "
              "per sample, both draw magnitudes and signs per sample; equalize is OpenCV's on DALI and PIL's on "
              "Kornia (3.7/255 mean abs difference on the sample photos); the other ops agree to rounding")
# Kornia's policy modules take no p, and a policy's own draws already decide what each image gets.
_P_WHY = "a policy's own draws decide which ops each image gets, and Kornia's policy modules have no p"

# Every backend reports each sample's ops and magnitudes in Kornia's conventions: the rotations,
# shears and shifts among them compose into one matrix per sample; the plan carries the names each
# candidate stands for, with which the exports read the raw draws.
_POLICY_TARGETS = TargetRule(geometry=targets.policy, plan_params=_op_names)


_K_POLICY_OP_NAMES = {"Rotate": "rotate", "ShearX": "shear_x", "ShearY": "shear_y", "TranslateX": "translate_x",
                    "TranslateY": "translate_y", "Brightness": "brightness", "Contrast": "contrast",
                    "Saturate": "color", "Sharpness": "sharpness", "Posterize": "posterize", "Solarize": "solarize",
                    "Equalize": "equalize", "AutoContrast": "auto_contrast", "Invert": "invert"}


def _k_policy_ops(m) -> dict[str, list[float]]:
    """{op name: [lo, hi]} of a RandAugment / TrivialAugment's candidates (one op each)."""
    out: dict[str, list[float]] = {}
    for position, sub in enumerate(m.children(), start=1):
        ops = list(sub.children())
        if len(ops) != 1:
            raise ValueError(f"candidate {position} holds {len(ops)} ops; each candidate holds one op")
        kind = type(ops[0]).__name__
        if kind not in _K_POLICY_OP_NAMES:
            raise ValueError(f"policy= holds {kind} (candidate {position}), which the workbench's op set leaves out "
                             f"(known: {', '.join(_K_POLICY_OP_NAMES.values())}); Kornia's default policy includes "
                             "solarize_add: pass a policy without it")
        name = _K_POLICY_OP_NAMES[kind]
        if name in out:
            raise ValueError(f"policy= names {name} twice; the op set holds each op once")
        if not POLICY_OP_BY_NAME[name].has_magnitude:
            out[name] = []
            continue
        lo, hi = ops[0].magnitude_range
        scale = 180.0 if name.startswith("shear") else 1.0  # Kornia's shear magnitude is degrees / 180
        lo, hi = kr.decimal(lo, scale), kr.decimal(hi, scale)
        out[name] = [-hi, hi] if ops[0].symmetric_megnitude else [lo, hi]
    return out


def _k_policy_signature(m) -> list:
    rows = []
    for sub in m.children():
        rows.append([(type(op).__name__, kr.plain(getattr(op, "magnitude_range", None)),
                      kr.plain(getattr(getattr(op, "op", None), "p", None))) for op in sub.children()])
    return rows


def _k_rand_augment(m, notes):
    notes.append("K.auto.RandAugment picks its ops once per batch; RandAugment on DALI picks per image")
    ops = _k_policy_ops(m)
    return {"n": int(m.n), "magnitude": int(m.m), "ops": ops}


RAND_AUGMENT = OpSpec(
    name="RandAugment", family="policies", targets=_POLICY_TARGETS, always_applies=True, always_applies_why=_P_WHY,
    from_kornia=Inverse("RandAugment", _k_rand_augment),
    doc="Apply n different ops drawn from the op set, each at strength magnitude/30 of its range "
        "(posterize from its top; rotate, shear and translate with a random sign), as Kornia's RandAugment "
        "(torchvision's: TorchvisionRandAugment).",
    params=(
        Number("n", "ops applied to each image, all different (at most the size of the op set)", 2, lo=1, hi=4,
               integer=True),
        Number("magnitude", "strength m in 1..29: each op uses lo + (hi - lo) * m / 30 of its range", 9, lo=1,
               hi=29, integer=True),
        OpRanges("ops", "the ops to draw from and each one's magnitude range at full strength", RAND_AUGMENT_OPS,
                 known=POLICY_OPS),
    ),
    kornia=KorniaLowering("auto.RandAugment", lambda a: {
        "n": _ops_in_use(a), "m": a["magnitude"], "policy": _kornia_candidates(a["ops"])}),
    dali=DaliLowering(
        draws=lambda a: {"_keys": _uniform01(shape=(len(a["ops"]),)),
                         "_coins": RandomOp("fn.random.coin_flip", {"shape": (_ops_in_use(a),)})},
        apply=_rand_augment_dali, reports=_REPORTS, note=_DALI_NOTE),
    albumentations=_albumentations("WbRandAugment", _alb_rand_augment),
    # 8 - 6 * 12 / 30 = 5.6 bits, floored to 5 on every backend: measured identical on the sample photos.
    parity=Parity(border=2, mae=0.1 / 255, psnr=60.0,
                  params={"n": 1, "magnitude": 12, "ops": {"posterize": [2.0, 8.0]}}),
    cost_hint="every op of the set is a branch of DALI's conditional execution; on Kornia the whole batch "
              "runs the drawn op, so a smaller op set changes little; fewer ops per image (n) cost less.",
)


def _k_trivial_augment(m, notes):
    return {"ops": _k_policy_ops(m)}


TRIVIAL_AUGMENT = OpSpec(
    name="TrivialAugment", family="policies", targets=_POLICY_TARGETS, always_applies=True, always_applies_why=_P_WHY,
    from_kornia=Inverse("TrivialAugment", _k_trivial_augment),
    doc="Apply one op drawn from the op set at a magnitude drawn uniformly from its range (rotate, shear and "
        "translate with a random sign), as Kornia's TrivialAugment (torchvision's: TorchvisionTrivialAugmentWide).",
    params=(OpRanges("ops", "the ops to draw from and the range each one's magnitude is drawn from",
                     TRIVIAL_AUGMENT_OPS, known=POLICY_OPS),),
    kornia=KorniaLowering("auto.TrivialAugment", lambda a: {"policy": _kornia_candidates(a["ops"])}),
    dali=DaliLowering(
        draws=lambda a: {"_op": _index(len(a["ops"])), "_u": _uniform01(),
                         "_coin": RandomOp("fn.random.coin_flip", {})},
        apply=_trivial_augment_dali, reports=_REPORTS, note=_DALI_NOTE),
    albumentations=_albumentations("WbTrivialAugment", _alb_trivial_augment),
    # Measured 0.045/255 mean abs error, 66.3 dB, DALI and Albumentations alike (they round to uint8, Kornia
    # keeps floats).
    parity=Parity(border=2, mae=0.1 / 255, psnr=60.0, params={"ops": {"color": [1.6, 1.6]}}),
)


def _k_auto_augment(m, notes):
    import kornia.augmentation.auto as auto

    mine = _k_policy_signature(m)
    for name in ("imagenet", "cifar10", "svhn"):
        if _k_policy_signature(auto.AutoAugment(policy=name)) == mine:
            return {"policy": name}
    raise ValueError("policy= is a custom sub-policy list; AutoAugment runs the papers' 'imagenet', 'cifar10' or "
                     "'svhn' policies")


AUTO_AUGMENT = OpSpec(
    name="AutoAugment", family="policies", targets=_POLICY_TARGETS, always_applies=True, always_applies_why=_P_WHY,
    from_kornia=Inverse("AutoAugment", _k_auto_augment),
    doc="Apply one of the AutoAugment paper's learned sub-policies (two ops, each run with its probability at a "
        "magnitude from its bin), as Kornia's AutoAugment tabulates them (torchvision's: TorchvisionAutoAugment).",
    params=(_PolicyName("policy", "the learned policy: its sub-policies", "imagenet",
                        options=tuple(AUTO_AUGMENT_POLICIES)),),
    kornia=KorniaLowering("auto.AutoAugment", lambda a: {"policy": a["policy"]}),
    dali=DaliLowering(
        draws=lambda a: {"_subpolicy": _index(len(AUTO_AUGMENT_POLICIES[a["policy"]])),
                         "_gates": _uniform01(shape=(_stages(a["policy"]),)),
                         "_u": _uniform01(shape=(_stages(a["policy"]),))},
        apply=_auto_augment_dali, reports=_REPORTS, note=_DALI_NOTE),
    albumentations=_albumentations("WbAutoAugment", _alb_auto_augment),
    # Sub-policies are drawn per batch on Kornia and per sample on DALI: each backend is
    # compared with Kornia's ops applied at its own reported draws. Measured: Kornia exact;
    # DALI 1.70/255 mean abs error, 34.4 dB, nearly all of it equalize (OpenCV's, see the note);
    # Albumentations 0.11/255, 62.6 dB (its equalize is Kornia's; rounding to levels at the end).
    parity=Parity(border=2, mae=2.0 / 255, psnr=33.0, params={"policy": "imagenet"},
                  reference=lambda image, row: apply_reported(image, row)),
)

OPS = (RAND_AUGMENT, TRIVIAL_AUGMENT, AUTO_AUGMENT)
