"""Normalisation: the last step of most training chains."""
from ..codegen.literals import Name
from .dali_helpers import assign
from .params import Floats
from .spec import DaliLowering, KorniaLowering, OpSpec, Parity

def _short(value: float) -> float:
    """10 significant digits: 57.12, not 57.120000000000005 (a 1e-10 relative change)."""
    return float(f"{value:.10g}")


NORMALIZE = OpSpec(
    name="Normalize", family="normalize", always_applies=True, parity=Parity(border=0),
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

OPS = (NORMALIZE,)
