"""Normalisation: the last step of most training chains."""
from .params import Floats
from .spec import KorniaLowering, OpSpec

NORMALIZE = OpSpec(
    name="Normalize", family="normalize", always_applies=True,
    doc="Subtract a per-channel mean and divide by a per-channel std (values in [0, 1] before).",
    params=(
        Floats("mean", "per-channel mean", (0.485, 0.456, 0.406), lo=-10.0, hi=10.0),
        Floats("std", "per-channel standard deviation", (0.229, 0.224, 0.225), lo=1e-6, hi=100.0),
    ),
    kornia=KorniaLowering("Normalize", lambda a: {"mean": tuple(a["mean"]), "std": tuple(a["std"])}),
)

OPS = (NORMALIZE,)
