"""Detection ops: crops that read the boxes (SSD's RandomIoUCrop)."""
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..runtime import targets
from .params import Number, Range, Thresholds
from .spec import AlbumentationsLowering, DaliLowering, Inverse, KorniaLowering, OpSpec, Parity, TargetRule

SAMPLER_OPTIONS = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0)  # torchvision's default minimum IoUs (SSD's)


def _tv_iou_crop(t, notes):
    """v2.RandomIoUCrop: its scale and aspect ratio bounds, minimum IoUs and trials."""
    options = [float(v) for v in (t.options if t.options is not None else SAMPLER_OPTIONS)]
    notes.append("v2.RandomIoUCrop: the boxes outside the window (their centre) are dropped, as "
                 "v2.SanitizeBoundingBoxes after it drops the ones torchvision zeroes")
    return {"scale": [float(t.min_scale), float(t.max_scale)],
            "aspect_ratio": [float(t.min_aspect_ratio), float(t.max_aspect_ratio)],
            "sampler_options": options, "trials": int(t.trials)}


def _module_args(a):
    """WbRandomIoUCrop's arguments (the Kornia module's and the Albumentations transform's)."""
    return {"scale": tuple(float(v) for v in a["scale"]), "aspect_ratio": tuple(float(v) for v in a["aspect_ratio"]),
            "sampler_options": tuple(float(v) for v in a["sampler_options"]), "trials": int(a["trials"])}


def _wb_iou_crop(built, notes):
    """The export's WbRandomIoUCrop, from its arguments (_module_args' inverse)."""
    return {name: list(value) if isinstance(value, tuple) else value for name, value in _module_args(built).items()}


def _dali_iou_crop(a, c, d):
    """The window augment_images drew on the host and feeds per sample (fed_window), cut by fn.slice."""
    v = c.var
    return [f"{v('applied')}, {v('crop_box')}, {v('start')}, {v('shape')} = fed_window({c.step})",
            f"{c.x} = slice_with_fill({c.x}, {v('start')}, {v('shape')}, [0.0])"]


def _reference_iou_crop(image, row):
    """The image cut to the reported crop_box."""
    x0, y0, x1, y1 = (int(round(float(v))) for v in row["crop_box"])
    return np.asarray(image, dtype=np.float64)[y0:y1, x0:x1] / 255.0


@dataclass(frozen=True)
class IoUCropSpec(OpSpec):
    """RandomIoUCrop's spec: each sample's window is drawn from its boxes (reads_boxes), anywhere from
    the image itself (left as it is) down to scale[0] of each side."""

    sizes_per_sample: bool = True

    def size_bounds(self, params: Mapping[str, Any], height: int, width: int) -> tuple[tuple[int, int], ...]:
        low = float(params["scale"][0])
        return (max(1, int(height * low)), max(1, int(width * low))), (height, width)

    def output_size(self, params: Mapping[str, Any], height: int, width: int) -> tuple[int, int]:
        return height, width


RANDOM_IOU_CROP = IoUCropSpec(
    name="RandomIoUCrop", family="geometric", default_p=1.0, reads_boxes=True, always_applies=True,
    always_applies_why="torchvision's RandomIoUCrop has no p: a value >= 1 in sampler_options leaves an image as it "
                       "is",
    targets=TargetRule(geometry=targets.window, size="crop", keep_centres=True),
    from_torchvision=Inverse("RandomIoUCrop", _tv_iou_crop),
    # Each backend draws its own windows: each is checked against numpy's cut at its reported crop_box.
    parity=Parity(border=0, mae=1e-6, params={"sampler_options": [0.0]}, reference=_reference_iou_crop),
    doc="Cut a window holding boxes, as torchvision's RandomIoUCrop (SSD's): draw a minimum IoU among "
        "`sampler_options` (a value >= 1 leaves the image as it is), then up to `trials` times draw the window's "
        "sides (each int(side x a scale drawn in `scale`), their ratio within `aspect_ratio`) and place, and keep "
        "the first window that holds a box centre whose box overlaps it by at least that IoU; torchvision's draws, "
        "in its order. The window depends on each image's boxes as they stand at this step, so the step needs "
        "boxes (Chain.run(images, boxes=...), --coco for exports); the boxes whose centre falls outside it are "
        "dropped, the others cut to it. Each sample leaves at its own size. Reported as crop_box [x0, y0, x1, y1).",
    params=(
        Range("scale", "window side as a fraction of the image's, drawn per side", (0.3, 1.0), lo=0.01, hi=1.0),
        Range("aspect_ratio", "allowed window width / height", (0.5, 2.0), lo=0.01, hi=100.0, slider=(0.1, 10.0)),
        Thresholds("sampler_options", "the minimum IoUs, one drawn per try (>= 1: leave the image as it is)",
                   SAMPLER_OPTIONS),
        Number("trials", "windows tried per minimum IoU drawn", 40, lo=1, hi=1000, integer=True, sample_hi=60,
               slider=(1, 100)),
    ),
    kornia=KorniaLowering("WbRandomIoUCrop", _module_args, record={"crop_box": "crop_box"}, local=True,
                          from_module=_wb_iou_crop),
    albumentations=AlbumentationsLowering("WbRandomIoUCrop", _module_args, record={"crop_box": "crop_box"}),
    dali=DaliLowering(
        reports=("applied", "crop_box"), apply=_dali_iou_crop,
        note="the pipeline runs in stretches: augment_images draws each window on the host from the boxes the "
             "steps before it moved (its own generator: other windows than Kornia's) and feeds it; the training "
             "pipeline refuses it (use the Kornia or Albumentations export to train)"),
)

OPS = (RANDOM_IOU_CROP,)
