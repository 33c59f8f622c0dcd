"""Occlusion ops: cut regions out of the image."""
from ..codegen.literals import Name
from .dali_helpers import assign, uniform
from .params import Number, Range
from .spec import DaliLowering, KorniaLowering, OpSpec, Parity


def _dali_erase(a, c, d):
    """Kornia's rectangle formula: sides from area and ratio (height / width), rounded."""
    h, w, x, y = (c.var(n) for n in ("height", "width", "x", "y"))
    area = f"{d['_area']} * {c.height} * {c.width}"
    return [
        f"{h} = dmath.clamp(dmath.floor(dmath.sqrt({area} * {d['_ratio']}) + 0.5), 1.0, {c.height})",
        f"{w} = dmath.clamp(dmath.floor(dmath.sqrt({area} / {d['_ratio']}) + 0.5), 1.0, {c.width})",
        f"{x} = dmath.floor({d['_u']} * ({c.width} - {w} + 1.0))",
        f"{y} = dmath.floor({d['_v']} * ({c.height} - {h} + 1.0))",
        assign(c.x, "fn.erase", {"anchor": Name(f"fn.stack({y}, {x})"), "shape": Name(f"fn.stack({h}, {w})"),
                                 "axis_names": "HW", "fill_value": float(a["value"]) * c.scale}),
    ]

ERASE = OpSpec(
    name="Erase", family="occlusion", default_p=0.5,
    # The whole image (area 1 at ratio height/width = 3/4): rectangles are placed at random.
    parity=Parity(border=0, params={"scale": [1.0, 1.0], "ratio": [0.75, 0.75], "value": 0.5}),
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
    dali=DaliLowering(
        needs_size=True, reports=("x", "y", "width", "height"),
        draws=lambda a: {"_area": uniform(*a["scale"]), "_ratio": uniform(*a["ratio"]),
                         "_u": uniform(0.0, 1.0), "_v": uniform(0.0, 1.0)},
        apply=_dali_erase,
        note="the aspect ratio is drawn uniformly; Kornia splits ranges that straddle 1 into two halves",
    ),
)

OPS = (ERASE,)
