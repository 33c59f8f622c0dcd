"""Occlusion ops: cut regions out of the image."""
from .params import Number, Range
from .spec import KorniaLowering, OpSpec

ERASE = OpSpec(
    name="Erase", family="occlusion", default_p=0.5,
    doc="Fill one random rectangle (area fraction `scale`, aspect `ratio`) with `value` (random erasing).",
    params=(
        Range("scale", "erased area as a fraction of the image", (0.02, 0.33), lo=0.001, hi=1.0),
        Range("ratio", "rectangle aspect ratio (height / width)", (0.3, 3.3), lo=0.05, hi=20.0),
        Number("value", "fill value (0 = black, 1 = white)", 0.0, lo=0.0, hi=1.0),
    ),
    kornia=KorniaLowering(
        "RandomErasing",
        lambda a: {"scale": tuple(a["scale"]), "ratio": tuple(a["ratio"]), "value": a["value"]},
        record={"xs": "x", "ys": "y", "widths": "width", "heights": "height"},
    ),
)

OPS = (ERASE,)
