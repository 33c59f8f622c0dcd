"""Blur and noise ops."""
from .dali_helpers import assign, uniform
from .params import Number, Range
from .spec import DaliLowering, KorniaLowering, OpSpec, Parity

GAUSSIAN_BLUR = OpSpec(
    name="GaussianBlur", family="blur/noise",
    cost_hint="its cost grows with kernel_size (two passes of kernel_size taps per pixel); a smaller "
              "kernel_size, about 6x the largest sigma rounded up to odd, gives nearly the same blur.", parity=Parity(border=0, params={"sigma": [1.3, 1.3], "kernel_size": 7}),
    doc="Gaussian blur with sigma drawn from `sigma`, a kernel_size x kernel_size window, mirrored borders.",
    params=(
        Range("sigma", "standard deviation range in pixels", (0.1, 2.0), lo=0.01, hi=20.0),
        Number("kernel_size", "window side in pixels (odd)", 5, lo=3, hi=99, integer=True, odd=True),
    ),
    kornia=KorniaLowering(
        "RandomGaussianBlur",
        # 'reflect' mirrors without repeating the edge pixel (OpenCV's and DALI's default).
        lambda a: {"kernel_size": (a["kernel_size"], a["kernel_size"]), "sigma": tuple(a["sigma"]),
                   "border_type": "reflect"},
        record={"sigma": "sigma"},
    ),
    # DALI's default border is reflect-101 too.
    dali=DaliLowering(
        mirror_invariant=True,  # the kernel is symmetric
        draws=lambda a: {"sigma": uniform(*a["sigma"])},
        apply=lambda a, c, d: [assign(c.x, "fn.gaussian_blur", {"sigma": d["sigma"], "window_size": a["kernel_size"]})],
    ),
)

OPS = (GAUSSIAN_BLUR,)
