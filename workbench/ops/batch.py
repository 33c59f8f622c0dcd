"""Batch mixing ops (MixUp, CutMix, and torchvision's own): each output sample blends two samples of the batch, and
their labels with the same weights.

Conventions shared by both ops and every place that runs them (`Chain.run`, both exports'
`augment_images`, `--save` and training loaders):
- Labels are soft targets: one float32 row of class probabilities per sample (a class id
  becomes a one-hot row). A mixing step makes each row (1 - w) * own + w * partner's, with
  the step's per-sample `partner` (batch index) and `weight` w (the partner's share: MixUp's
  lambda, CutMix's pasted area fraction). Soft targets compose, so steps can follow each
  other, and torch's cross_entropy takes them as they are.
- p gates the whole batch (Kornia's convention): every sample of a batch is mixed, or none.
- The batch must be one size at the step: put a Resize or a crop before it for mixed sizes.
- The partner is a random permutation of the batch (a sample may draw itself); TorchvisionMixUp and
  TorchvisionCutMix pair each sample with the one before it and draw once for the batch, as
  torchvision's MixUp and CutMix do.
"""
from dataclasses import dataclass

from ..literals import literal
from .dali_helpers import RandomOp, uniform
from .params import Flag, Number, Range, _fail
from .spec import AlbumentationsLowering, Inverse, DaliLowering, KorniaLowering, OpSpec, Parity, TargetRule
from . import kornia_reading as kr

# Albumentations transforms one image at a time (2.0.8 has no MixUp or CutMix; its Mosaic and
# OverlayElements take extra images through metadata): the export writes the workbench's own
# WbMixUp / WbCutMix (runtime/albumentations_mixing.py), which mix the batch in numpy between the
# per-image stretches of the chain, in the training loader's collate.
_ALBUMENTATIONS_NOTE = ("the export writes the workbench's own {0}, which mixes the whole batch in numpy (the "
                        "training loader's collate, after the workers' per-image steps); partners and weights are "
                        "drawn from its own numpy stream")


def _partner() -> RandomOp:
    """A random permutation of the batch, drawn per iteration (a sample may be its own partner,
    as with Kornia's torch.randperm)."""
    return RandomOp("fn.batch_permutation", {})


def _call(function: str, *args, **kwargs) -> str:
    """Source of a call of a runtime DALI function (runtime/dali_ops/batch.py): node arguments as
    the Names they are, plain values as literals."""
    return function + "(" + ", ".join([*map(literal, args), *(f"{k}={literal(v)}" for k, v in kwargs.items())]) + ")"


def _dali_mixup(a, c, d) -> list[str]:
    """(1 - w) * x + w * partner, in float; back to uint8 (rounded) while values are 0-255
    (mixup_images, runtime/dali_ops/batch.py)."""
    return [f"{c.x} = " + _call("mixup_images", c.x, d["partner"], d["weight"], uint8=c.scale == 255.0)]


def _k_mixup(m, notes):
    g = kr.gen(m)
    return {"weight": [0.0, 1.0] if g.lambda_val is None else kr.pair_of(g.lambda_val, "lambda_val"), "alpha": 0.0}


def _wb_beta_mixup(built, notes):
    """The export's WbBetaMixUp (MixUp with a Beta draw), from its arguments."""
    return {"weight": [float(v) for v in built["lambda_val"]], "alpha": float(built["alpha"])}


def _beta(a) -> RandomOp:
    """One Beta(alpha, alpha) draw per sample (torchvision's MixUp and CutMix, and the paper)."""
    return RandomOp("fn.random.beta", {"alpha": float(a["alpha"]), "beta": float(a["alpha"])})


def _mixup_weight(a) -> RandomOp:
    """The partner's share per sample: uniform in `weight`, or Beta(alpha, alpha) with alpha > 0."""
    return _beta(a) if a["alpha"] > 0 else uniform(*a["weight"])


MIXUP = OpSpec(
    name="MixUp", family="batch mixing", mixes_batch=True, targets=TargetRule(mix="mixup"),
    from_kornia=Inverse("RandomMixUpV2", _k_mixup),
    # Against the blend at each backend's own partner and weight (tests/test_ops_batch.py,
    # tests/test_batch_mixing_albumentations.py), on 8 photos: Kornia exact; DALI and Albumentations
    # round to uint8, 0.5/255 at most. At w = 0.3 the rounding costs 0.25/255 on average where the
    # partner is another image (0.3 * (y - x) spreads over tenths) and 0 where a sample drew itself, so
    # the mean depends on the draw: DALI 0.16/255 (3 of 8 drew themselves, 60.9 dB), Albumentations
    # 0.22/255 (1 of 8, 59.4 dB); 0.26/255 holds for any draw.
    parity=Parity(same_size=True, border=0, mae=0.26 / 255, psnr=58.0, params={"weight": [0.3, 0.3]}),
    doc="Blend each image with a partner from the same batch as (1 - w) * image + w * partner, w drawn "
        "uniformly per sample from `weight` (or from Beta(alpha, alpha) with alpha > 0, as torchvision's MixUp), "
        "and mix the labels with the same w; p gates the whole batch.",
    params=(
        # Uniform, as Kornia's lambda_val (not the paper's Beta(alpha, alpha)); the partner is
        # random, so [0, 0.5] gives the same mixtures as [0, 1] with the own image dominant.
        Range("weight", "the partner's share w of image and label (MixUp's lambda), drawn per sample",
              (0.0, 0.5), lo=0.0, hi=1.0),
        # torchvision's MixUp (and the paper) draw lambda from Beta(alpha, alpha): 0.2 is common.
        Number("alpha", "draw w from Beta(alpha, alpha) instead of uniformly from weight (0: uniform)", 0.0,
               lo=0.0, hi=100.0, slider=(0.0, 4.0)),
    ),
    kornia=KorniaLowering(
        "RandomMixUpV2", lambda a: {"lambda_val": tuple(a["weight"]), **({"alpha": a["alpha"]} if a["alpha"] else {})},
        record={"partner": "partner", "weight": "weight"},
        local_variant="WbBetaMixUp", local_when=lambda a: a["alpha"] > 0, from_module=_wb_beta_mixup,
    ),
    dali=DaliLowering(
        draws=lambda a: {"partner": _partner(), "weight": _mixup_weight(a)},
        apply=_dali_mixup,
        note="built from fn.batch_permutation, fn.permute_batch and arithmetic (DALI has no MixUp); "
             "uint8 images are rounded back to uint8 after the blend, Kornia keeps float; partners are "
             "drawn differently, so parity is measured at each backend's own partner and weight",
    ),
    albumentations=AlbumentationsLowering(
        "WbMixUp", lambda a: {"weight": tuple(a["weight"]), "alpha": a["alpha"]},
        record={"partner": "partner", "weight": "weight"},
        note=_ALBUMENTATIONS_NOTE.format("WbMixUp") + "; uint8 images are rounded back to uint8 (np.rint) after "
                                                       "the float32 blend",
    ),
    cost_hint="a full-image blend per sample: about the cost of a brightness change",
)


@dataclass(frozen=True)
class _Area(Range):
    """A Range whose upper end must be above 0: a box of area 0 pastes nothing (Kornia refuses it)."""

    def validate(self, where, value):
        lo, hi = super().validate(where, value)
        if hi <= 0.0:
            raise _fail(where, self.name, f"must reach above 0 (an area of 0 pastes nothing), got [{lo}, {hi}]")
        return [lo, hi]


def _dali_cutmix(a, c, d) -> list[str]:
    """Kornia's CutmixGenerator, step by step (cutmix_box, runtime/dali_ops/batch.py): lambda =
    clamp(U(0, 1), 1 - area_hi, 1 - area_lo) (its Beta(1, 1)), sides floor(sqrt(1 - lambda) * side),
    start floor(u * (side - cut + 1)). The partner's box is cut out for every sample (permute_batch
    sees the whole batch); only the paste is gated."""
    box, weight, anchor, shape, patch = (c.var(n) for n in ("box", "weight", "anchor", "shape", "patch"))
    hi, lo = 1.0 - a["area"][0], 1.0 - a["area"][1]
    return [
        f"{box}, {weight}, {anchor}, {shape} = " + _call("cutmix_box", d["_cut"], d["_ux"], d["_uy"], c.height,
                                                         c.width, lo, hi),
        f"{patch} = " + _call("cutmix_patch", c.x, d["partner"], anchor, shape),
        f"{c.x} = " + _call("cutmix_paste", c.x, patch, anchor, shape),
    ]


def _k_cutmix(m, notes):
    g = kr.gen(m)
    if g.num_mix != 1:
        raise ValueError(f"num_mix={g.num_mix} pastes several boxes; CutMix pastes one (num_mix=1)")
    beta = 1.0 if g.beta is None else float(kr.plain(g.beta))
    lo, hi = [0.0, 1.0] if g.cut_size is None else kr.pair_of(g.cut_size, "cut_size")
    if not m.use_correct_lambda:
        notes.append("K.RandomCutMixV2: use_correct_lambda=False mixes the labels by Kornia's old weight; CutMix "
                     "mixes them by the pasted area")
    return {"area": [kr.decimal(1.0 - hi), kr.decimal(1.0 - lo)], "alpha": 0.0 if beta == 1.0 else beta}


def _cut_draw(a) -> RandomOp:
    """CutMix's lambda before the clamp: uniform (Beta(1, 1)), or Beta(alpha, alpha) with alpha > 0."""
    return _beta(a) if a["alpha"] > 0 else uniform(0.0, 1.0)


CUTMIX = OpSpec(
    name="CutMix", family="batch mixing", mixes_batch=True, targets=TargetRule(mix="cutmix"),
    from_kornia=Inverse("RandomCutMixV2", _k_cutmix),
    # The box is a copy: both backends equal the paste at their own draws exactly.
    parity=Parity(same_size=True, border=0, mae=1e-6, psnr=99.0, params={"area": [0.25, 0.25]}),
    doc="Paste a box from a partner image of the same batch (the box keeps the image's aspect ratio, its area "
        "fraction is U(0, 1) clamped to `area`, sides rounded down) and mix the labels by the pasted area "
        "fraction; p gates the whole batch.",
    params=(
        # CutMix's lambda is Beta(1, 1) (uniform) clamped: Kornia's cut_size is 1 - area.
        _Area("area", "pasted area fraction: U(0, 1) clamped to this range", (0.0, 1.0), lo=0.0, hi=1.0),
        # Kornia's beta, torchvision's alpha: lambda ~ Beta(alpha, alpha), the area 1 - lambda.
        Number("alpha", "draw the area from Beta(alpha, alpha) before the clamp instead of uniformly (0: uniform)",
               0.0, lo=0.0, hi=100.0, slider=(0.0, 4.0)),
    ),
    kornia=KorniaLowering(
        "RandomCutMixV2",
        # Kornia's cut_size clamps lambda = 1 - area; the labels come from our own weights, so
        # use_correct_lambda only silences its deprecation warning.
        lambda a: {"cut_size": (1.0 - a["area"][1], 1.0 - a["area"][0]), "use_correct_lambda": True,
                   **({"beta": a["alpha"]} if a["alpha"] else {})},
        record={"partner": "partner", "weight": "weight", "box": "box"},
    ),
    dali=DaliLowering(
        needs_size=True, reports=("box", "weight"),
        draws=lambda a: {"partner": _partner(), "_cut": _cut_draw(a), "_ux": uniform(0.0, 1.0),
                         "_uy": uniform(0.0, 1.0)},
        apply=_dali_cutmix,
        note="built from fn.batch_permutation, fn.permute_batch and fn.erase (DALI has no CutMix); "
             "same box sizes and placement rule as Kornia's, drawn from its own streams (parity is "
             "measured at each backend's own partner and box)",
    ),
    albumentations=AlbumentationsLowering(
        "WbCutMix", lambda a: {"area": tuple(a["area"]), "alpha": a["alpha"]},
        record={"partner": "partner", "weight": "weight", "box": "box"},
        note=_ALBUMENTATIONS_NOTE.format("WbCutMix") + "; Kornia's box rule, in float32",
    ),
    cost_hint="two erases and a copy of the batch: cheap next to decoding",
)

def _tv_alpha(t, notes):
    """v2.MixUp and v2.CutMix: their alpha (lambda ~ Beta(alpha, alpha)); num_classes and labels_getter say
    how torchvision finds the labels, which the chain is given (Chain.run's labels=, the loaders')."""
    return {"alpha": float(t.alpha)}


def _wb_alpha(built, notes):
    """The export's WbTorchvisionMixUp / WbTorchvisionCutMix, from its arguments."""
    return {"alpha": float(built["alpha"])}


_TV_ALPHA = Number("alpha", "lambda ~ Beta(alpha, alpha), one draw per batch (1: uniform)", 1.0, lo=0.01, hi=100.0,
                   slider=(0.05, 4.0))
_TV_WHY = "torchvision's has no p: it mixes every batch it is given"


def _dali_tv_mixup(a, c, d) -> list[str]:
    """lambda x each image + (1 - lambda) x the one before it (roll_partners), one lambda (sample 0's)
    for the batch; back to uint8 (rounded) while values are 0-255 (mixup_images)."""
    partner, weight = c.var("partner"), c.var("weight")
    return [f"{partner} = roll_partners()",
            f"{weight} = batch_value({d['_lam']}) * -1.0 + 1.0",
            f"{c.x} = " + _call("mixup_images", c.x, partner, weight, uint8=c.scale == 255.0)]


def _dali_tv_cutmix(a, c, d) -> list[str]:
    """torchvision's box (tv_cutmix_window) from one lambda and one centre (sample 0's) for the batch,
    pasted from the image before each one (roll_partners, cutmix_patch, cutmix_paste)."""
    partner, box, weight, anchor, shape, patch = (c.var(n) for n in ("partner", "box", "weight", "anchor", "shape",
                                                                      "patch"))
    return [
        f"{partner} = roll_partners()",
        f"{box}, {weight}, {anchor}, {shape} = tv_cutmix_window(batch_value({d['_lam']}), batch_value({d['_ux']}), "
        f"batch_value({d['_uy']}), {c.height}, {c.width})",
        f"{patch} = " + _call("cutmix_patch", c.x, partner, anchor, shape),
        f"{c.x} = " + _call("cutmix_paste", c.x, patch, anchor, shape),
    ]


TORCHVISION_MIXUP = OpSpec(
    name="TorchvisionMixUp", family="batch mixing", mixes_batch=True, targets=TargetRule(mix="mixup"),
    always_applies=True, always_applies_why=_TV_WHY,
    from_torchvision=Inverse("MixUp", _tv_alpha),
    doc="torchvision's MixUp (v2.MixUp): each image becomes lambda x itself + (1 - lambda) x the image before it "
        "in the batch (the first's partner is the last: torchvision's roll by one), one lambda ~ Beta(alpha, alpha) "
        "for the whole batch, and the labels are mixed with the same weights. Kornia draws lambda with torch's "
        "generator as torchvision does (the same value for the same seed). Reported as MixUp is: partner and "
        "weight = 1 - lambda.",
    params=(_TV_ALPHA,),
    kornia=KorniaLowering("WbTorchvisionMixUp", lambda a: {"alpha": a["alpha"]},
                          record={"partner": "partner", "weight": "weight"}, local=True, from_module=_wb_alpha),
    dali=DaliLowering(
        draws=lambda a: {"_lam": _beta(a)}, reports=("partner", "weight"), apply=_dali_tv_mixup,
        note="lambda from DALI's generator (sample 0's Beta draw for the batch), the partners from the batch size; "
             "uint8 images are rounded back to uint8 after the blend"),
    albumentations=AlbumentationsLowering(
        "WbTorchvisionMixUp", lambda a: {"alpha": a["alpha"]}, record={"partner": "partner", "weight": "weight"},
        note=_ALBUMENTATIONS_NOTE.format("WbTorchvisionMixUp") + "; uint8 images are rounded back to uint8"),
    cost_hint="a full-image blend per sample: about the cost of a brightness change",
)

TORCHVISION_CUTMIX = OpSpec(
    name="TorchvisionCutMix", family="batch mixing", mixes_batch=True, targets=TargetRule(mix="cutmix"),
    always_applies=True, always_applies_why=_TV_WHY,
    from_torchvision=Inverse("CutMix", _tv_alpha),
    doc="torchvision's CutMix (v2.CutMix): one lambda ~ Beta(alpha, alpha) and one centre drawn for the whole "
        "batch, a box of half-sides int(0.5 sqrt(1 - lambda) x side) around it cut at the borders, pasted into each "
        "image from the image before it (the first's from the last: torchvision's roll by one), and the labels "
        "mixed by the pasted area. Kornia draws as torchvision does (the same box for the same seed). Reported as "
        "CutMix is: partner, weight (the pasted area fraction) and box.",
    params=(_TV_ALPHA,),
    kornia=KorniaLowering("WbTorchvisionCutMix", lambda a: {"alpha": a["alpha"]},
                          record={"partner": "partner", "weight": "weight", "box": "box"}, local=True,
                          from_module=_wb_alpha),
    dali=DaliLowering(
        needs_size=True, reports=("partner", "box", "weight"),
        draws=lambda a: {"_lam": _beta(a), "_ux": uniform(0.0, 1.0), "_uy": uniform(0.0, 1.0)},
        apply=_dali_tv_cutmix,
        note="lambda and the centre from DALI's generator (sample 0's draws for the batch), the partners from the "
             "batch size"),
    albumentations=AlbumentationsLowering(
        "WbTorchvisionCutMix", lambda a: {"alpha": a["alpha"]},
        record={"partner": "partner", "weight": "weight", "box": "box"},
        note=_ALBUMENTATIONS_NOTE.format("WbTorchvisionCutMix")),
    cost_hint="two erases and a copy of the batch: cheap next to decoding",
)


def _dali_tv_mixup_or_cutmix(a, c, d) -> list[str]:
    """Both of torchvision's mixers, one of them in effect per batch (`choice`, sample 0's coin): MixUp
    blends with its weight times (1 - choice), a weight of 0 on a CutMix batch, which leaves the images
    as they are; CutMix pastes a box whose shape is multiplied by choice, an empty one on a MixUp batch.
    The reported weight and box are those of the one chosen."""
    partner, choice, box, weight, anchor, shape, patch, blend, cut = (
        c.var(n) for n in ("partner", "choice", "box", "weight", "anchor", "shape", "patch", "blend", "cut"))
    return [
        f"{partner} = roll_partners()",
        f"{choice} = (batch_value({d['_coin']}) >= {float(a['mixup_share'])!r}) * 1.0",
        f"{blend} = (batch_value({d['_lam_mixup']}) * -1.0 + 1.0) * (1.0 - {choice})",
        f"{box}, {cut}, {anchor}, {shape} = tv_cutmix_window(batch_value({d['_lam_cutmix']}), "
        f"batch_value({d['_ux']}), batch_value({d['_uy']}), {c.height}, {c.width})",
        f"{box}, {shape} = {box} * {choice}, {shape} * {choice}",
        f"{weight} = {blend} + {cut} * {choice}",
        f"{c.x} = " + _call("mixup_images", c.x, partner, blend, uint8=c.scale == 255.0),
        f"{patch} = " + _call("cutmix_patch", c.x, partner, anchor, shape),
        f"{c.x} = " + _call("cutmix_paste", c.x, patch, anchor, shape),
    ]


def _tv_choice_args(a) -> dict:
    return {"mixup_alpha": a["mixup_alpha"], "cutmix_alpha": a["cutmix_alpha"], "mixup_share": a["mixup_share"],
            "cutmix_first": a["cutmix_first"]}


def _wb_choice(built, notes):
    """The export's WbTorchvisionMixUpOrCutMix, from its arguments."""
    return {"mixup_alpha": float(built["mixup_alpha"]), "cutmix_alpha": float(built["cutmix_alpha"]),
            "mixup_share": float(built["mixup_share"]), "cutmix_first": bool(built["cutmix_first"])}


TORCHVISION_MIXUP_OR_CUTMIX = OpSpec(
    name="TorchvisionMixUpOrCutMix", family="batch mixing", mixes_batch=True, targets=TargetRule(mix="choice"),
    always_applies=True, always_applies_why="torchvision's RandomChoice has no p: it mixes every batch it is given",
    doc="torchvision's RandomChoice([MixUp, CutMix]), as its classification reference mixes each batch: one of "
        "TorchvisionMixUp and TorchvisionCutMix per batch, MixUp with probability `mixup_share`, then that one's "
        "draws and mixing (each image with the one before it, the labels mixed by the same weight). Kornia draws as "
        "torchvision does (the same choice and mixing for the same seed; `cutmix_first` is torchvision's list "
        "order, which decides which of its draws picks which). Reported as the chosen one is (partner, weight, "
        "CutMix's box: empty for MixUp) and `choice`: 0 MixUp, 1 CutMix.",
    params=(Number("mixup_alpha", "MixUp's lambda ~ Beta(alpha, alpha)", 1.0, lo=0.01, hi=100.0, slider=(0.05, 4.0)),
            Number("cutmix_alpha", "CutMix's lambda ~ Beta(alpha, alpha)", 1.0, lo=0.01, hi=100.0,
                   slider=(0.05, 4.0)),
            Number("mixup_share", "the probability that a batch gets MixUp (else CutMix)", 0.5, lo=0.0, hi=1.0),
            Flag("cutmix_first", "CutMix comes first in torchvision's list (only its draw order changes)", False)),
    kornia=KorniaLowering("WbTorchvisionMixUpOrCutMix", _tv_choice_args,
                          record={"partner": "partner", "weight": "weight", "box": "box", "choice": "choice"},
                          local=True, from_module=_wb_choice),
    dali=DaliLowering(
        needs_size=True, reports=("partner", "weight", "box", "choice"),
        draws=lambda a: {"_coin": uniform(0.0, 1.0), "_lam_mixup": _beta({"alpha": a["mixup_alpha"]}),
                         "_lam_cutmix": _beta({"alpha": a["cutmix_alpha"]}), "_ux": uniform(0.0, 1.0),
                         "_uy": uniform(0.0, 1.0)},
        apply=_dali_tv_mixup_or_cutmix,
        note="the choice, lambdas and centre from DALI's generator (sample 0's draws for the batch); both mixers are "
             "built, the one not chosen with a zero weight or an empty box"),
    albumentations=AlbumentationsLowering(
        "WbTorchvisionMixUpOrCutMix", _tv_choice_args,
        record={"partner": "partner", "weight": "weight", "box": "box", "choice": "choice"},
        note=_ALBUMENTATIONS_NOTE.format("WbTorchvisionMixUpOrCutMix") + "; uint8 images are rounded back to uint8 "
             "after MixUp's blend"),
    cost_hint="MixUp's blend or CutMix's paste per batch (DALI builds both): about a brightness change",
)

OPS = (MIXUP, CUTMIX, TORCHVISION_MIXUP, TORCHVISION_CUTMIX, TORCHVISION_MIXUP_OR_CUTMIX)
