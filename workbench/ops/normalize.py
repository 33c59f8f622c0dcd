"""Normalisation: the last step of most training chains."""
import dataclasses

import numpy as np

from ..literals import Name
from .dali_helpers import assign
from .params import Floats
from .spec import AlbumentationsLowering, DaliLowering, KorniaLowering, OpSpec, Parity, Inverse
from . import kornia_reading as kr

def _short(value: float) -> float:
    """10 significant digits: 57.12, not 57.120000000000005 (a 1e-10 relative change)."""
    return float(f"{value:.10g}")



def _tv_normalize(t, notes):
    def three(values):
        values = [float(v) for v in values]
        return values * 3 if len(values) == 1 else values

    return {"mean": three(t.mean), "std": three(t.std)}


def _k_normalize(m, notes):
    def three(key):
        raw = kr.flag(m, key)
        values = [kr.decimal(v) for v in raw.reshape(-1)] if hasattr(raw, "reshape") else kr.as_list(kr.plain(raw))
        if len(values) == 1:
            values = values * 3
        if len(values) != 3:
            raise ValueError(f"{key}={values}: Normalize takes one value per RGB channel")
        return values

    return {"mean": three("mean"), "std": three("std")}


NORMALIZE = OpSpec(
    name="Normalize", family="normalize", always_applies=True, parity=Parity(border=0),
    from_kornia=Inverse("Normalize", _k_normalize),
    from_torchvision=Inverse("Normalize", _tv_normalize),
    doc="Subtract a per-channel mean and divide by a per-channel std (values in [0, 1] before).",
    params=(
        Floats("mean", "per-channel mean", (0.485, 0.456, 0.406), lo=-10.0, hi=10.0),
        Floats("std", "per-channel standard deviation", (0.229, 0.224, 0.225), lo=1e-6, hi=100.0),
    ),
    kornia=KorniaLowering("Normalize", lambda a: {"mean": tuple(a["mean"]), "std": tuple(a["std"])}),
    # Mean and std are given for values in [0, 1]; DALI's images are 0-255 until here.
    dali=DaliLowering(
        unit_scale_after=True,
        apply=lambda a, c, d: [assign(c.x, "fn.crop_mirror_normalize", {
            "dtype": Name("types.FLOAT"), "output_layout": "HWC",
            "mean": [_short(m * c.scale) for m in a["mean"]], "std": [_short(s * c.scale) for s in a["std"]],
            **({"mirror": c.mirror} if c.mirror is not None else {})})],
    ),
)

def _from_albumentations(t):
    """A.Normalize computes (x - mean * max) / (std * max) on 0-255 values: in [0, 1] units
    that is mean * max / 255 and std * max / 255."""
    if getattr(t, "normalization", "standard") != "standard":
        raise ValueError(f"normalization={t.normalization!r} has no Normalize equivalent (only 'standard')")
    k = float(t.max_pixel_value) / 255.0
    mean = [float(m) for m in np.broadcast_to(np.asarray(t.mean, dtype=float), (3,))]
    std = [float(s) for s in np.broadcast_to(np.asarray(t.std, dtype=float), (3,))]
    return {"mean": [_short(m * k) for m in mean], "std": [_short(s * k) for s in std]}


NORMALIZE = dataclasses.replace(NORMALIZE, albumentations=AlbumentationsLowering(
    "Normalize", lambda a: {"mean": tuple(a["mean"]), "std": tuple(a["std"]), "max_pixel_value": 255.0},
    from_transform=_from_albumentations,
    note="expects 0-255 input (max_pixel_value 255): a second Normalize after the first would scale wrongly",
))

OPS = (NORMALIZE,)
