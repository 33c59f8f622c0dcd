"""The workbench's own Albumentations transforms: subclasses of A's that change only how the image
is resampled, or how a field is drawn. The export writes them in place of the A class they extend
(LOCAL_TRANSFORMS in codegen/albumentations.py) and copies them, with what they use, from here.

Example:
    >>> issubclass(WbResize, A.Resize)
    True
"""
import os

# Importing Albumentations otherwise asks PyPI for a newer version (see albumentations_program).
os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

import albumentations as A
import cv2
import numpy as np
from PIL import Image

from .libjpeg import libjpeg_round_trip
from .targets import BOXES_NEEDED, drawn_sides, elastic_field, iou_crop_window, scaled_sides, zoom_out_padding


def wb_pil_resize(img, height, width, resample=Image.BILINEAR):
    """`img` (HxWxC, uint8 or float) resized to height x width by PIL, with BILINEAR by default: a triangle
    filter stretched by the shrink factor, the antialias filter of torch's
    interpolate(antialias=True) and of DALI's linear resize with antialias (or with PIL's BICUBIC,
    `resample`: torch's antialiased bicubic, a = -0.5). uint8 keeps PIL's 8-bit rounding; other
    dtypes are resampled per channel in float32."""
    if img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3:
        # np.array: a writable copy (np.asarray of a PIL image is read-only, which torch warns about).
        return np.array(Image.fromarray(img).resize((width, height), resample))
    planes = img[:, :, None] if img.ndim == 2 else img
    kind = np.uint8 if img.dtype == np.uint8 else np.float32
    out = [np.asarray(Image.fromarray(np.ascontiguousarray(planes[:, :, k], dtype=kind)).resize(
        (width, height), resample)) for k in range(planes.shape[2])]
    return np.stack(out, axis=2).reshape((height, width) + img.shape[2:]).astype(img.dtype)


def wb_filtered_resize(transform, img, height, width):
    """`img` resized to height x width as the workbench's Kornia and DALI lowerings resize with
    antialias, when `transform` asks for a low-pass (area_for_downscale): bilinear through the
    triangle filter when it shrinks an axis, bicubic through PIL's (torch's antialiased bicubic,
    enlarging too), nearest unfiltered (DALI's nearest cannot filter). None otherwise (A's own
    resize applies: OpenCV's cubic is torch's without antialias)."""
    if transform.area_for_downscale is None:
        return None
    if transform.interpolation == cv2.INTER_CUBIC:
        return wb_pil_resize(img, height, width, Image.BICUBIC)
    if height >= img.shape[0] and width >= img.shape[1]:
        return None
    if transform.interpolation == cv2.INTER_LINEAR:
        return wb_pil_resize(img, height, width)
    return cv2.resize(img, (width, height), interpolation=transform.interpolation)


class WbResize(A.Resize):
    """A.Resize whose area_for_downscale shrinks as wb_filtered_resize does (the triangle filter, not
    OpenCV's area filter); everything else is A.Resize's."""

    def apply(self, img, **params):
        out = wb_filtered_resize(self, img, self.height, self.width)
        return super().apply(img, **params) if out is None else out


class WbRandomResizedCrop(A.RandomResizedCrop):
    """A.RandomResizedCrop whose area_for_downscale (antialias) shrinks the window as WbResize
    shrinks (the triangle filter, not OpenCV's area filter); everything else is A's."""

    def apply(self, img, crop_coords, **params):
        x_min, y_min, x_max, y_max = crop_coords
        window = img[y_min:y_max, x_min:x_max]
        out = wb_filtered_resize(self, window, *self.size)
        return super().apply(img, crop_coords=crop_coords, **params) if out is None else out


class WbPad(A.ImageOnlyTransform):
    """torchvision's RandomCrop with padding and pad_if_needed (the workbench's Pad): `padding` pixels
    of `fill` (0-255), or made from the image (`padding_mode`), on every side, a side still short of
    (height, width) padded by the shortfall on both ends, then a window cut at a uniformly drawn
    place. Reports its padding [left, right, top, bottom] and its window [x0, y0, x1, y1) in the padded
    image (A.RandomCrop's pad_params are a dict, which the records cannot hold). Masks, boxes and
    keypoints move from these reports."""

    # torchvision's padding modes as OpenCV's borders.
    BORDERS = {"constant": cv2.BORDER_CONSTANT, "edge": cv2.BORDER_REPLICATE, "reflect": cv2.BORDER_REFLECT_101,
               "symmetric": cv2.BORDER_REFLECT}

    def __init__(self, height, width, padding=0, fill=0.0, padding_mode="constant", p=1.0):
        super().__init__(p=p)
        self.height, self.width, self.padding, self.fill = int(height), int(width), int(padding), float(fill)
        self.padding_mode = str(padding_mode)

    @property
    def targets_as_params(self):
        return ["image"]

    def get_params_dependent_on_data(self, params, data):
        height, width = params["shape"][:2]
        pad_w = self.padding + max(self.width - (width + 2 * self.padding), 0)
        pad_h = self.padding + max(self.height - (height + 2 * self.padding), 0)
        x0 = int(self.py_random.randint(0, width + 2 * pad_w - self.width))
        y0 = int(self.py_random.randint(0, height + 2 * pad_h - self.height))
        return {"padding": [pad_w, pad_w, pad_h, pad_h], "crop_box": [x0, y0, x0 + self.width, y0 + self.height]}

    def apply(self, img, padding, crop_box, **params):
        left, right, top, bottom = padding
        value = [self.fill] * (img.shape[2] if img.ndim == 3 else 1)
        padded = cv2.copyMakeBorder(img, top, bottom, left, right, self.BORDERS[self.padding_mode], value=value)
        x0, y0, x1, y1 = crop_box
        return padded[y0:y1, x0:x1]

    def get_transform_init_args_names(self):
        return ("height", "width", "padding", "fill", "padding_mode")


class WbLibjpegCompression(A.ImageCompression):
    """A.ImageCompression's draws (a whole-number quality from quality_range) coded by libjpeg as
    torchvision's v2.JPEG codes (libjpeg_round_trip), not by OpenCV's coder as Albumentations codes (1.6
    to 6.7 levels apart on photos): JpegCompression's "libjpeg" codec. Float images are coded as 8-bit
    levels and come back as float32."""

    def apply(self, img, quality, image_type, **params):
        if img.dtype == np.uint8:
            return libjpeg_round_trip(img, quality)
        levels = np.rint(np.clip(img, 0.0, 1.0) * 255.0).astype(np.uint8)
        return (libjpeg_round_trip(levels, quality) / 255.0).astype(np.float32)


class WbSharpness(A.ImageOnlyTransform):
    """torchvision's (and Kornia's) sharpness, which no A transform is: blend the image with its 3x3
    smoothing ([[1, 1, 1], [1, 5, 1], [1, 1, 1]] / 13, the one-pixel border kept) by a factor drawn
    uniformly from `factor` (0 = smoothed, 1 = unchanged, 2 = sharper; A.Sharpen cannot go below 1),
    computed in float and rounded to the image's levels. Reports the factor."""

    def __init__(self, factor=(0.5, 2.0), p=0.5):
        super().__init__(p=p)
        self.factor = (float(factor[0]), float(factor[1]))

    def get_params(self):
        return {"factor": self.py_random.uniform(*self.factor)}

    def apply(self, img, factor, **params):
        if img.shape[0] < 3 or img.shape[1] < 3:
            return img
        x = img.astype(np.float32)
        kernel = np.array([[1.0, 1.0, 1.0], [1.0, 5.0, 1.0], [1.0, 1.0, 1.0]], np.float32) / 13.0
        smooth = x.copy()
        smooth[1:-1, 1:-1] = cv2.filter2D(x, -1, kernel, borderType=cv2.BORDER_REFLECT_101)[1:-1, 1:-1]
        out = smooth + np.float32(factor) * (x - smooth)
        if img.dtype == np.uint8:
            return np.clip(np.rint(out), 0, 255).astype(np.uint8)
        return np.clip(out, 0.0, 1.0).astype(img.dtype)

    def get_transform_init_args_names(self):
        return ("factor",)


class WbPerspective(A.ImageOnlyTransform):
    """Kornia's RandomPerspective (the workbench's Perspective), which A.Perspective is not (it zooms
    into a quadrilateral of corners pushed outwards): each corner (pixel centres 0 and W - 1) moves
    inwards by a uniform fraction of `distortion` x half the size, on each axis, and the image is
    warped to match by OpenCV, 0 outside. Reports start_points and end_points (4 x [x, y])."""

    def __init__(self, distortion=0.5, interpolation=cv2.INTER_LINEAR, p=0.5):
        super().__init__(p=p)
        self.distortion, self.interpolation = float(distortion), int(interpolation)

    @property
    def targets_as_params(self):
        return ["image"]

    def get_params_dependent_on_data(self, params, data):
        height, width = params["shape"][:2]
        shifts = self.random_generator.uniform(0.0, 1.0, size=(4, 2))
        right, bottom = max(width - 1.0, 1.0), max(height - 1.0, 1.0)
        # A side of one pixel has nothing to distort (as Kornia: a unit extent, no shift).
        reach = np.array([self.distortion * 0.5 * width * min(width - 1.0, 1.0),
                          self.distortion * 0.5 * height * min(height - 1.0, 1.0)])
        start = np.array([[0.0, 0.0], [right, 0.0], [right, bottom], [0.0, bottom]])
        inwards = np.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]])
        return {"start_points": start, "end_points": start + inwards * reach * shifts}

    def apply(self, img, start_points, end_points, **params):
        matrix = cv2.getPerspectiveTransform(start_points.astype(np.float32), end_points.astype(np.float32))
        return cv2.warpPerspective(img, matrix, (img.shape[1], img.shape[0]), flags=self.interpolation,
                                   borderMode=cv2.BORDER_CONSTANT, borderValue=0)

    def get_transform_init_args_names(self):
        return ("distortion", "interpolation")


def wb_side_resize(transform, img, longest):
    """`img` resized as A.LongestMaxSize (`longest`) / A.SmallestMaxSize resize it, its sides rounded
    as `transform.rounding` says (scaled_sides: nearest as A, or down as torchvision's Resize) and
    shrunk as wb_filtered_resize shrinks."""
    height, width = img.shape[:2]
    reference = max(height, width) if longest else min(height, width)
    size = scaled_sides(height, width, int(transform.max_size), reference, transform.rounding)
    out = wb_filtered_resize(transform, img, *size)
    return cv2.resize(img, size[::-1], interpolation=transform.interpolation) if out is None else out


class WbRandomSize(A.ImageOnlyTransform):
    """torchvision's RandomShortestSize, RandomResize and ScaleJitter (the workbench's ops of those
    names; `rule` "shortest", "resize" or "jitter", settings as kornia_modules' WbRandomSize): a size
    drawn per image (drawn_sides), resized to by OpenCV, or through the triangle filter with
    `antialias` as WbResize shrinks. Reports out_size [height, width]; masks, boxes and keypoints
    move from it."""

    def __init__(self, rule, sizes=(), span=(0.0, 0.0), bound=0, target=(0, 0), interpolation=cv2.INTER_LINEAR,
                 antialias=True, p=1.0):
        super().__init__(p=p)
        self.rule, self.sizes, self.span = str(rule), tuple(int(v) for v in sizes), (float(span[0]), float(span[1]))
        self.bound, self.target = int(bound), (int(target[0]), int(target[1]))
        self.interpolation, self.antialias = int(interpolation), bool(antialias)
        # What wb_filtered_resize reads: a low-pass where torchvision's antialias is on.
        self.area_for_downscale = "image" if self.antialias else None

    @property
    def targets_as_params(self):
        return ["image"]

    def get_params_dependent_on_data(self, params, data):
        height, width = params["shape"][:2]
        if self.rule == "shortest":
            value = self.py_random.choice(self.sizes)
        elif self.rule == "resize":
            value = self.py_random.randint(int(self.span[0]), int(self.span[1]))
        else:
            value = self.py_random.uniform(*self.span)
        return {"out_size": list(drawn_sides(self.rule, value, height, width, self.bound, self.target))}

    def apply(self, img, out_size, **params):
        height, width = out_size
        out = wb_filtered_resize(self, img, height, width)
        return cv2.resize(img, (width, height), interpolation=self.interpolation) if out is None else out

    def get_transform_init_args_names(self):
        return ("rule", "sizes", "span", "bound", "target", "interpolation", "antialias")


class WbRandomZoomOut(A.ImageOnlyTransform):
    """torchvision's RandomZoomOut (the workbench's op of that name): the image on a canvas `ratio`
    times its size (drawn in `side_range`) at a drawn place, filled with `fill` (0-255 per channel
    on uint8 images); sides and place as zoom_out_padding computes them. Reports the padding
    [left, right, top, bottom]; masks, boxes and keypoints move from it."""

    def __init__(self, side_range=(1.0, 4.0), fill=(0.0, 0.0, 0.0), p=0.5):
        super().__init__(p=p)
        self.side_range, self.fill = (float(side_range[0]), float(side_range[1])), tuple(float(v) for v in fill)

    @property
    def targets_as_params(self):
        return ["image"]

    def get_params_dependent_on_data(self, params, data):
        height, width = params["shape"][:2]
        ratio = self.py_random.uniform(*self.side_range)
        u, v = self.py_random.random(), self.py_random.random()
        return {"padding": zoom_out_padding(ratio, u, v, height, width)}

    def apply(self, img, padding, **params):
        left, right, top, bottom = padding
        value = list(self.fill) if img.ndim == 3 and img.shape[2] == len(self.fill) else [self.fill[0]]
        return cv2.copyMakeBorder(img, top, bottom, left, right, cv2.BORDER_CONSTANT, value=value)

    def get_transform_init_args_names(self):
        return ("side_range", "fill")


class WbRandomIoUCrop(A.ImageOnlyTransform):
    """torchvision's RandomIoUCrop (the workbench's op of that name): a window holding box centres that
    overlap it by at least an IoU drawn among `sampler_options`, drawn as iou_crop_window draws it from
    the transform's generator. The program sets `boxes` (the image's K x 4 [x1, y1, x2, y2] boxes as
    they stand at this step) before each call. Reports the crop_box [x0, y0, x1, y1); None where the
    image is left as it is (an option >= 1)."""

    reads_boxes = True

    def __init__(self, scale=(0.3, 1.0), aspect_ratio=(0.5, 2.0),
                 sampler_options=(0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0), trials=40, p=1.0):
        super().__init__(p=p)
        self.scale, self.aspect_ratio = (float(scale[0]), float(scale[1])), (float(aspect_ratio[0]),
                                                                            float(aspect_ratio[1]))
        self.sampler_options, self.trials = tuple(float(v) for v in sampler_options), int(trials)
        self.boxes = None

    @property
    def targets_as_params(self):
        return ["image"]

    def get_params_dependent_on_data(self, params, data):
        if self.boxes is None:
            raise ValueError(BOXES_NEEDED)
        height, width = params["shape"][:2]
        settings = {"scale": self.scale, "aspect_ratio": self.aspect_ratio, "sampler_options": self.sampler_options,
                    "trials": self.trials}
        window = iou_crop_window(self.boxes, height, width, settings,
                                 lambda options: int(self.random_generator.integers(options)),
                                 lambda: self.random_generator.random(2, dtype=np.float32))
        return {"crop_box": window}

    def apply(self, img, crop_box, **params):
        if crop_box is None:
            return img
        x0, y0, x1, y1 = crop_box
        return np.ascontiguousarray(img[y0:y1, x0:x1])

    def get_transform_init_args_names(self):
        return ("scale", "aspect_ratio", "sampler_options", "trials")


class WbLongestMaxSize(A.LongestMaxSize):
    """A.LongestMaxSize with area_for_downscale as in WbResize, and torchvision's rounding down of the
    other side on request (rounding="down")."""

    def __init__(self, *args, rounding="nearest", **kwargs):
        super().__init__(*args, **kwargs)
        self.rounding = rounding

    def apply(self, img, scale, **params):
        return wb_side_resize(self, img, longest=True)


class WbSmallestMaxSize(A.SmallestMaxSize):
    """A.SmallestMaxSize with area_for_downscale as in WbResize, and torchvision's rounding down of
    the other side on request (rounding="down")."""

    def __init__(self, *args, rounding="nearest", **kwargs):
        super().__init__(*args, **kwargs)
        self.rounding = rounding

    def apply(self, img, scale, **params):
        return wb_side_resize(self, img, longest=False)


# A.ElasticTransform draws its noise straight from the transform's generator, so nothing it
# reports rebuilds the field; this one draws a seed there and the noise from it, as A does, and
# reports the seed: the targets follow the very field (elastic_field, runtime/targets.py).
class WbElasticTransform(A.ElasticTransform):
    """A.ElasticTransform with its noise drawn from np.random.default_rng(seed), the seed drawn
    from the transform's own generator and reported (`seed`); the field is elastic_field's."""

    def get_params_dependent_on_data(self, params, data):
        seed = int(self.random_generator.integers(0, 2 ** 31 - 1))
        height, width = params["shape"][:2]
        settings = {"alpha": self.alpha, "sigma": self.sigma, "approximate": self.approximate,
                    "same_dxdy": self.same_dxdy, "noise_distribution": self.noise_distribution}
        dx, dy = elastic_field(settings, seed, height, width)
        xs, ys = np.meshgrid(np.arange(width), np.arange(height))
        return {"map_x": (xs + dx).astype(np.float32), "map_y": (ys + dy).astype(np.float32), "seed": seed}
