"""Imported torchvision pipelines do what torchvision does: for each v2 transform that maps, the
imported chain's output on the sample photos is within 1/255 (mean absolute error per image) of
torchvision's own, run by a real torchvision (scripts/test.sh installs it; see
tests/torchvision_beside_cpu_torch.py). Settings are fixed where torchvision draws (p=1, a range of
one value); where a draw cannot be fixed (a crop's place, an elastic field), torchvision's functional
kernel is run at the draw the chain reports. And every transform class of `transforms.v2` is
accounted for: it maps, it only changes the layout, or `chain.unmapped` gives the reason and the
nearest op.
"""
import importlib
import io
import os

import cv2
import numpy as np
import pytest
from PIL import Image

# CI must compare with the real thing, never skip it: scripts/test.sh installs torchvision.
torchvision = importlib.import_module("torchvision") if os.environ.get("CI") else pytest.importorskip("torchvision")
import torch  # noqa: E402
from torchvision.transforms import v2  # noqa: E402
from torchvision.transforms.v2 import functional as F  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.importers.torchvision import COMPOSITES, LAYOUT_ONLY, _NEAREST  # noqa: E402
from workbench.runtime.targets import elastic_field  # noqa: E402

BILINEAR = v2.InterpolationMode.BILINEAR
BICUBIC = v2.InterpolationMode.BICUBIC
TOLERANCE = 1.0 / 255


@pytest.fixture(scope="module")
def photos():
    """Three sample photos at 150 x 200 (not square: a resize of one side must round the other)."""
    images = wb.load_images("sample_data")[:3]
    return [cv2.resize(np.asarray(i), (200, 150), interpolation=cv2.INTER_AREA) for i in images]


def _tensor(image, uint8=False):
    t = torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1)
    return t if uint8 else t.float() / 255.0


def _array(t):
    t = t.permute(1, 2, 0)
    return (t.float() / 255.0 if t.dtype == torch.uint8 else t).numpy()


def _imported(transform):
    chain = wb.Chain.from_torchvision([transform], seed=3)
    assert chain.steps and not chain.unmapped, [str(u) for u in chain.unmapped]
    return chain


def _assert_close(ours, theirs):
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape
        mae = float(np.abs(np.asarray(o, np.float64) - t).mean())
        assert mae <= TOLERANCE, f"mean abs error {mae * 255:.3f}/255"


# Transforms whose every draw a setting can fix: (id, transform, whether torchvision needs uint8).
FIXED = [
    ("HorizontalFlip", lambda: v2.RandomHorizontalFlip(p=1.0), False),
    ("VerticalFlip", lambda: v2.RandomVerticalFlip(p=1.0), False),
    ("Brightness", lambda: v2.ColorJitter(brightness=(1.3, 1.3)), False),
    ("Contrast", lambda: v2.ColorJitter(contrast=(0.6, 0.6)), False),
    ("Saturation", lambda: v2.ColorJitter(saturation=(1.5, 1.5)), False),
    ("Hue", lambda: v2.ColorJitter(hue=(0.12, 0.12)), False),
    ("RandomGrayscale", lambda: v2.RandomGrayscale(p=1.0), False),
    ("Grayscale", lambda: v2.Grayscale(num_output_channels=3), False),
    ("Invert", lambda: v2.RandomInvert(p=1.0), False),
    ("Solarize", lambda: v2.RandomSolarize(0.6, p=1.0), False),
    ("Posterize", lambda: v2.RandomPosterize(3, p=1.0), True),
    ("Equalize", lambda: v2.RandomEqualize(p=1.0), True),
    ("AutoContrast", lambda: v2.RandomAutocontrast(p=1.0), False),
    ("Sharpness", lambda: v2.RandomAdjustSharpness(2.5, p=1.0), False),
    ("GaussianBlur", lambda: v2.GaussianBlur(9, sigma=(1.6, 1.6)), False),
    ("Normalize", lambda: v2.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]), False),
    ("CenterCrop", lambda: v2.CenterCrop((96, 120)), False),
    ("Resize", lambda: v2.Resize((120, 90)), False),
    ("Resize-enlarge-no-antialias", lambda: v2.Resize((240, 320), antialias=False), False),
    # 101 * 200 / 150 = 134.67: torchvision rounds the long side down to 134 (A's rule: 135).
    ("Resize-short-side", lambda: v2.Resize(101), False),
    ("Resize-short-side-nearest", lambda: v2.Resize(97, interpolation=v2.InterpolationMode.NEAREST_EXACT), False),
    ("Resize-long-side", lambda: v2.Resize(None, max_size=131), False),
    ("Rotate-bilinear", lambda: v2.RandomRotation((17, 17), interpolation=BILINEAR), False),
    ("Rotate-nearest", lambda: v2.RandomRotation((-25, -25)), False),
    ("Affine", lambda: v2.RandomAffine(degrees=(12, 12), scale=(1.15, 1.15), shear=(6, 6), interpolation=BILINEAR),
     False),
    ("ChannelPermutation-identity", lambda: v2.RandomChannelPermutation(), False),
]


@pytest.mark.parametrize("name, make, uint8", FIXED, ids=[c[0] for c in FIXED])
def test_fixed_settings_give_torchvisions_pixels(photos, name, make, uint8):
    transform = make()
    chain = _imported(transform)
    result = chain.run(photos, backend="kornia", device="cpu")
    ours = list(result.images)
    if name == "ChannelPermutation-identity":  # torchvision draws the permutation: use the chain's
        theirs = [_array(F.permute_channels(_tensor(p), [int(c) for c in row[0]["permutation"]]))
                  for p, row in zip(photos, result.params)]
    else:
        theirs = [_array(transform(_tensor(p, uint8))) for p in photos]
    _assert_close(ours, theirs)


def _draws(result):
    return [row[0] for row in result.params]


# Transforms whose draw no setting fixes: torchvision's kernel at the chain's reported draw.
def _resized_crop(photo, row, antialias=True):
    x0, y0, x1, y1 = (int(round(v)) for v in row["crop_box"])
    return F.resized_crop(_tensor(photo), y0, x0, y1 - y0, x1 - x0, [64, 80], antialias=antialias)


def _crop(photo, row):
    x0, y0, x1, y1 = (int(round(v)) for v in row["crop_box"])
    return F.crop(_tensor(photo), y0, x0, y1 - y0, x1 - x0)


def _erase(photo, row):
    return F.erase(_tensor(photo), int(row["y"]), int(row["x"]), int(row["height"]), int(row["width"]),
                   torch.tensor(0.0))


def _perspective(photo, row):
    # torchvision's corner points are in pixel-edge coordinates (a pixel's centre at x + 0.5), the
    # reported ones at pixel centres: half a pixel off, 0.6-1.2/255 on these photos without the shift.
    start = (np.asarray(row["start_points"], np.float64).reshape(4, 2) + 0.5).tolist()
    end = (np.asarray(row["end_points"], np.float64).reshape(4, 2) + 0.5).tolist()
    return F.perspective(_tensor(photo), start, end, interpolation=BILINEAR)


def _elastic(photo, row, params):
    height, width = photo.shape[:2]
    dx, dy = elastic_field(params, int(row["seed"]), height, width)
    # torchvision's displacement is in grid units: half the image is 1.
    displacement = torch.from_numpy(np.stack([dx * 2.0 / width, dy * 2.0 / height], -1)[None]).float()
    return F.elastic(_tensor(photo), displacement, interpolation=BILINEAR)


DRAWN = [
    ("RandomResizedCrop", lambda: v2.RandomResizedCrop((64, 80), scale=(0.2, 1.0)), _resized_crop),
    ("RandomResizedCrop-no-antialias", lambda: v2.RandomResizedCrop((64, 80), scale=(0.2, 1.0), antialias=False),
     lambda photo, row: _resized_crop(photo, row, antialias=False)),
    ("RandomCrop", lambda: v2.RandomCrop((90, 110)), _crop),
    ("RandomErasing", lambda: v2.RandomErasing(p=1.0, value=0), _erase),
    ("RandomPerspective", lambda: v2.RandomPerspective(0.4, p=1.0), _perspective),
    ("ElasticTransform", lambda: v2.ElasticTransform(alpha=40.0, sigma=4.0), None),
]


@pytest.mark.parametrize("name, make, kernel", DRAWN, ids=[c[0] for c in DRAWN])
def test_drawn_transforms_give_torchvisions_pixels_at_the_same_draw(photos, name, make, kernel):
    chain = _imported(make())
    result = chain.run(photos, backend="kornia", device="cpu")
    if name == "ElasticTransform":
        step = chain.steps[0]
        kernel = lambda photo, row: _elastic(photo, row, step.params)  # noqa: E731
    _assert_close(list(result.images), [_array(kernel(p, row)) for p, row in zip(photos, _draws(result))])


def test_elastic_fields_are_as_strong_as_torchvisions():
    """The field itself is drawn differently (torchvision's generator, the op's seeded one): its spread
    in pixels, over a few draws, is torchvision's (alpha / 2 pixels of blurred uniform noise)."""
    transform = v2.ElasticTransform(alpha=80.0, sigma=5.0)
    params = _imported(transform).steps[0].params
    height, width = 120, 160
    torch.manual_seed(0)
    theirs = [transform.make_params([torch.zeros(3, height, width)])["displacement"][0] for _ in range(6)]
    theirs_px = np.concatenate([np.stack([d[..., 0].numpy() * width / 2, d[..., 1].numpy() * height / 2])
                                for d in theirs])
    ours_px = np.concatenate([np.stack(elastic_field(params, seed, height, width)) for seed in range(6)])
    # Away from the border, where the two blurs pad differently.
    inner = (slice(None), slice(20, -20), slice(20, -20))
    assert abs(np.std(ours_px[inner]) / np.std(theirs_px[inner]) - 1.0) < 0.1


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
@pytest.mark.parametrize("antialias", [True, False])
def test_every_backend_crops_and_resizes_as_torchvision_at_its_own_window(backend, antialias, photos):
    """RandomResizedCrop on each backend, at the window it drew, against torchvision's resized_crop:
    shrunk 2-4x with the triangle filter (antialias, torchvision's default) or without a filter."""
    chain = _imported(v2.RandomResizedCrop((64, 80), scale=(0.3, 1.0), antialias=antialias))
    result = chain.run(photos, backend=backend, device="cpu")
    ours = [np.asarray(o, np.float64) / (255.0 if o.dtype == np.uint8 else 1.0) for o in result.images]
    theirs = [_array(_resized_crop(p, row, antialias)) for p, row in zip(photos, _draws(result))]
    _assert_close(ours, theirs)
    # The filter matters here: the other setting is measurably off.
    other = [_array(_resized_crop(p, row, not antialias)) for p, row in zip(photos, _draws(result))]
    assert max(float(np.abs(o - t).mean()) for o, t in zip(ours, other)) > 1.5 / 255


def _photometric_params(row):
    """torchvision's RandomPhotometricDistort params from the draws the imported group reports."""
    brightness, orders, shuffle = row["steps"]
    branch = orders["steps"][0] if orders["steps"][0]["applied"] else orders["steps"][1]
    parts = {step["op"]: step for step in branch["steps"]}

    def factor(step, key):
        return float(step[key]) if step["applied"] else None

    return {"brightness_factor": factor(brightness, "factor"), "contrast_factor": factor(parts["Contrast"], "factor"),
            "saturation_factor": factor(parts["Saturation"], "factor"), "hue_factor": factor(parts["Hue"], "shift"),
            "contrast_before": branch["steps"][0]["op"] == "Contrast",
            "channel_permutation": (torch.tensor([int(c) for c in shuffle["permutation"]]) if shuffle["applied"]
                                    else None)}


def test_photometric_distort_gives_torchvisions_pixels_at_the_same_draws(photos):
    """SSD's RandomPhotometricDistort imports as the group it runs; at the group's reported draws
    (which parts applied, their factors, the order of contrast, the permutation) torchvision's own
    transform gives the same pixels. Eight images, so that both orders and skipped parts occur."""
    transform = v2.RandomPhotometricDistort(p=0.5)
    chain = _imported(transform)
    images = (photos * 3)[:8]
    result = chain.run(images, backend="kornia", device="cpu")
    params = [_photometric_params(row[0]) for row in result.params]
    assert {p["contrast_before"] for p in params} == {True, False}
    assert any(p["hue_factor"] is None for p in params) and any(p["hue_factor"] is not None for p in params)
    _assert_close(list(result.images), [_array(transform.transform(_tensor(i), p)) for i, p in zip(images, params)])


BICUBIC_CASES = [
    ("shrink", lambda: v2.Resize((90, 120), interpolation=BICUBIC)),
    ("enlarge", lambda: v2.Resize((230, 290), interpolation=BICUBIC)),
    ("shrink-unfiltered", lambda: v2.Resize((90, 120), interpolation=BICUBIC, antialias=False)),
    ("enlarge-unfiltered", lambda: v2.Resize((230, 290), interpolation=BICUBIC, antialias=False)),
    ("short-side", lambda: v2.Resize(101, interpolation=BICUBIC)),
]


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
@pytest.mark.parametrize("name, make", BICUBIC_CASES, ids=[c[0] for c in BICUBIC_CASES])
def test_bicubic_resizes_give_torchvisions_pixels_on_every_backend(backend, name, make, photos):
    """torch's bicubic: a = -0.75, or with antialias (torchvision's default) PIL's a = -0.5 kernel,
    stretched when shrinking. Kornia computes it as torch does (exact); DALI's cubic is a = -0.5 and
    Albumentations' uint8 rounds, so they are held to the 1/255 bound."""
    transform = make()
    chain = _imported(transform)
    assert chain.steps[0].params["interpolation"] == "bicubic"
    out = chain.run(photos, backend=backend, device="cpu").images
    ours = [np.asarray(o, np.float64) / (255.0 if o.dtype == np.uint8 else 1.0) for o in out]
    theirs = [_array(transform(_tensor(p))) for p in photos]
    if backend == "kornia":
        assert max(float(np.abs(o - t).mean()) for o, t in zip(ours, theirs)) < 0.01 / 255
    else:  # uint8 outputs saturate where the cubic overshoots
        theirs = [np.clip(t, 0.0, 1.0) for t in theirs]
    _assert_close(ours, theirs)


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
def test_a_bicubic_resized_crop_gives_torchvisions_pixels_at_its_own_window(backend, photos):
    chain = _imported(v2.RandomResizedCrop((64, 80), scale=(0.3, 1.0), interpolation=BICUBIC))
    result = chain.run(photos, backend=backend, device="cpu")
    ours = [np.asarray(o, np.float64) / (255.0 if o.dtype == np.uint8 else 1.0) for o in result.images]
    theirs = []
    for photo, row in zip(photos, _draws(result)):
        x0, y0, x1, y1 = (int(round(v)) for v in row["crop_box"])
        crop = F.resized_crop(_tensor(photo), y0, x0, y1 - y0, x1 - x0, [64, 80], interpolation=BICUBIC)
        theirs.append(np.clip(_array(crop), 0.0, 1.0) if backend != "kornia" else _array(crop))
    _assert_close(ours, theirs)


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
@pytest.mark.parametrize("side, mode", [(32, "constant"), (26, "constant"), (20, "constant"), (32, "reflect"),
                                        (20, "edge"), (26, "symmetric"), (3, "reflect")])
def test_cifars_padded_crop_pads_and_cuts_as_torchvision(backend, side, mode, photos):
    """RandomCrop(32, padding=4) (and pad_if_needed, for images that stay short): 4 pixels on every side,
    then what is still missing on both ends of a short side, then a window at random; each backend
    against torchvision's pad and crop at its own window. Kornia's RandomCrop would pad a 26-pixel side
    by 6 (the larger of the shortfall and the margin), torchvision by 4. The padding is `fill`, or made
    from the image as torchvision's padding_mode says (a 3-pixel image reflected 16 pixels out too)."""
    transform = v2.RandomCrop(32, padding=4, pad_if_needed=True, fill=128, padding_mode=mode)
    chain = _imported(transform)
    assert chain.steps[0].op == "Pad" and chain.steps[0].params["padding"] == 4
    assert chain.steps[0].params["padding_mode"] == mode
    images = [p[:side, :side] for p in photos]
    result = chain.run(images, backend=backend, device="cpu")
    pad = 4 + max(0, 32 - (side + 8))
    theirs = []
    for image, row in zip(images, _draws(result)):
        assert row["padding"] == [pad] * 4
        x0, y0, x1, y1 = (int(v) for v in row["crop_box"])
        padded = _border_pad(_tensor(image, uint8=True), pad, mode)
        theirs.append(_array(F.crop(padded, y0, x0, y1 - y0, x1 - x0)))
    ours = [np.asarray(o, np.float64) / (255.0 if o.dtype == np.uint8 else 1.0) for o in result.images]
    _assert_close(ours, theirs)
    assert max(float(np.abs(o - t).max()) for o, t in zip(ours, theirs)) < 0.5 / 255  # a copy, no resampling


def _border_pad(image, pad, mode):
    """torchvision's pad by `pad` on every side; torch's reflect and symmetric take at most the side's
    length at a time, so a tiny image is padded in steps (each step mirrors what the last one made, as one
    mirror of a periodic extension would)."""
    if mode == "constant":
        return F.pad(image, [pad] * 4, fill=128)
    while pad > 0:
        step = min(pad, image.shape[-1] - 1, image.shape[-2] - 1) if mode == "reflect" else \
            min(pad, image.shape[-1], image.shape[-2])
        image, pad = F.pad(image, [step] * 4, padding_mode=mode), pad - step
    return image


def _mixing_weights(transform, backend, photos, side):
    """(the imported step's weight, one per batch, over 150 batches of two side x side photos; the
    partner's share torchvision itself draws, 20000 times: 1 - lambda, or CutMix's pasted fraction
    1 - lam_adjusted on a side x side image)."""
    chain = _imported(transform)
    tiny = [p[:side, :side] for p in photos[:2]]
    weights = np.array([chain.run(tiny, backend=backend, seed=s).params[0][0]["weight"] for s in range(150)])
    torch.manual_seed(0)
    if isinstance(transform, v2.CutMix):
        image = torch.zeros(1, 3, side, side)
        theirs = [1.0 - transform.make_params([image])["lam_adjusted"] for _ in range(20000)]
    else:
        theirs = 1.0 - transform._dist.sample((20000,)).numpy().ravel()
    return weights, np.asarray(theirs)


def _extreme(values):
    """The share of values below 0.1 or above 0.9."""
    return ((values < 0.1) | (values > 0.9)).mean()


# Kornia draws torchvision's own lambda and box for the same seed (tests/test_torchvision_mixing.py); the
# other backends draw from their own generators: their draws follow torchvision's distributions.
@pytest.mark.parametrize("backend", ["dali", "albumentations"])
def test_mixup_draws_its_weights_from_torchvisions_beta(backend, photos):
    """v2.MixUp(alpha=0.2): the partner's share 1 - lambda is Beta(0.2, 0.2) (most draws near 0 or 1),
    compared with torchvision's own distribution object."""
    weights, theirs = _mixing_weights(v2.MixUp(alpha=0.2, num_classes=3), backend, photos, 8)
    assert abs(_extreme(weights) - _extreme(theirs)) < 0.12
    assert abs(weights.std() - theirs.std()) < 0.05 and abs(weights.mean() - 0.5) < 0.1


@pytest.mark.parametrize("backend", ["dali", "albumentations"])
def test_cutmix_draws_its_area_as_torchvision_does(backend, photos):
    """v2.CutMix(alpha=0.3): the pasted area fraction, its box cut at the borders, spreads as
    torchvision's own make_params spreads it on the same size."""
    weights, theirs = _mixing_weights(v2.CutMix(alpha=0.3, num_classes=3), backend, photos, 64)
    assert abs(_extreme(weights) - _extreme(theirs)) < 0.12 and abs(weights.std() - theirs.std()) < 0.05
    assert abs(weights.mean() - theirs.mean()) < 0.08


def test_gaussian_noise_has_torchvisions_strength(photos):
    """Noise cannot be drawn alike: the change's spread matches torchvision's (both clip to [0, 1] here
    only where the image is near 0 or 1, so compare where it is not)."""
    transform = v2.GaussianNoise(sigma=0.08)
    chain = _imported(transform)
    assert chain.steps[0].params["std"] == [0.08, 0.08] and chain.steps[0].p == 1.0
    ours = np.stack(chain.run(photos, backend="kornia", device="cpu").images)
    torch.manual_seed(0)
    theirs = np.stack([_array(transform(_tensor(p))) for p in photos])
    inputs = np.stack(photos) / 255.0
    inside = (inputs > 0.3) & (inputs < 0.7)
    spread_ours, spread_theirs = np.std((ours - inputs)[inside]), np.std((theirs - inputs)[inside])
    assert abs(spread_ours / spread_theirs - 1.0) < 0.03, (spread_ours, spread_theirs)
    assert abs(np.mean((ours - inputs)[inside])) < 0.003


def test_resize_of_one_side_rounds_as_torchvision_on_every_backend(photos):
    """Resize(101) on 150 x 200: torchvision's 101 x 134, not A.SmallestMaxSize's 101 x 135, on every backend
    (the sides come from one rule, runtime/targets.py's scaled_sides)."""
    chain = _imported(v2.Resize(101))
    assert chain.steps[0].op == "SmallestMaxSize" and chain.steps[0].params["rounding"] == "down"
    for backend in ("kornia", "dali", "albumentations"):
        out = chain.run(photos, backend=backend, device="cpu").images
        assert [o.shape[:2] for o in out] == [(101, 134)] * 3, backend
    nearest = wb.Chain().add("SmallestMaxSize", max_size=101)
    assert nearest.run(photos[:1]).images[0].shape[:2] == (101, 135)


_ADJUST = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_color_jitter_applies_its_kinds_in_each_samples_order_as_torchvision(backend, photos):
    """v2.ColorJitter draws an order of its four adjustments per image: the imported chain too (order
    'random'), and at each sample's reported order and factors it gives torchvision's pixels."""
    transform = v2.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)
    chain = _imported(transform)
    assert chain.steps[0].op == "ColorJitter" and chain.steps[0].params["order"] == "random" and not chain.notes
    result = chain.run(photos * 8, backend=backend, device="cpu")
    orders = {tuple(int(k) for k in rows[0]["order"]) for rows in result.params}
    assert len(orders) >= 10 and all(sorted(order) == [0, 1, 2, 3] for order in orders)  # 24 possible
    for photo, out, rows in zip(photos * 8, result.images, result.params):
        row = rows[0]
        factors = (row["brightness"], row["contrast"], row["saturation"], row["hue"])
        theirs = _tensor(photo)
        for kind in (int(k) for k in row["order"]):
            theirs = _ADJUST[kind](theirs, float(factors[kind]))
        theirs = _array(theirs)
        ours = np.asarray(out, np.float64) / (255.0 if out.dtype == np.uint8 else 1.0)
        # (Against torchvision in float: DALI rounds to a level after each kind, within 1/255 of it.)
        assert float(np.abs(ours - theirs).mean()) <= TOLERANCE, (backend, row["order"])


def _libjpeg_levels(image, quality):
    """What v2.JPEG does to a uint8 HWC image (encode_jpeg, then decode_jpeg: libjpeg with its defaults,
    4:2:0 chroma, the integer DCT), through PIL's libjpeg with the same defaults, as uint8 levels."""
    encoded = io.BytesIO()
    Image.fromarray(image).save(encoded, "JPEG", quality=quality)
    return np.asarray(Image.open(io.BytesIO(encoded.getvalue())).convert("RGB"))


def _torchvision_codes_jpeg() -> bool:
    """Whether torchvision's JPEG codec (its C++ image library) loads here: not beside the tests' CPU
    torch (tests/torchvision_beside_cpu_torch.py), yes on the GPU machines' torchvision."""
    try:
        v2.JPEG(50)(torch.zeros(3, 8, 8, dtype=torch.uint8))
    except RuntimeError:
        return False
    return True


@pytest.mark.gpu_aware
@pytest.mark.parametrize("quality", [10, 50, 95])
def test_jpeg_gives_torchvisions_libjpeg_pixels_on_every_backend(photos, quality):
    """An imported v2.JPEG codes with the libjpeg codec: every backend gives libjpeg's pixels, PIL's round
    trip here and, where torchvision's own codec loads (the GPU check runs this there), v2.JPEG's own."""
    chain = _imported(v2.JPEG(quality))
    assert chain.steps[0].op == "JpegCompression" and chain.steps[0].params["codec"] == "libjpeg"
    levels = [_libjpeg_levels(image, quality) for image in photos]
    if _torchvision_codes_jpeg():
        # Levels against levels: torchvision's uint8 output as it is, no float conversion on either side.
        theirs = [v2.JPEG(quality)(_tensor(image, uint8=True)).permute(1, 2, 0).numpy() for image in photos]
        for t, e in zip(theirs, levels):
            assert t.dtype == e.dtype == np.uint8 and np.array_equal(t, e), (
                f"torchvision's JPEG is not libjpeg's with its defaults here: {np.count_nonzero(t != e)} levels "
                f"differ, at most by {np.abs(t.astype(int) - e).max()}")
    expected = [e / 255.0 for e in levels]
    for backend in ("kornia", "dali", "albumentations"):
        result = chain.run(photos, backend=backend, device="cpu")
        for ours, e in zip(result.images, expected):
            ours = np.asarray(ours, np.float64) / (255.0 if np.asarray(ours).dtype == np.uint8 else 1.0)
            assert np.abs(ours - e).max() <= 1e-6, (backend, quality)


# Mapped transforms whose pixels this file does not compare with torchvision's yet, and why.
NOT_COMPARED = {
    "RandomPhotometricDistort": "compared above at the imported group's draws (a group of steps, not one op)",
}


def _classes():
    return sorted(n for n in dir(v2) if isinstance(getattr(v2, n), type) and issubclass(getattr(v2, n), v2.Transform)
                  and n != "Transform")


def test_every_v2_transform_class_is_accounted_for():
    """Each class of transforms.v2 maps (and is compared above, or in NOT_COMPARED with the reason), only
    changes the layout, or is refused naming the nearest op."""
    from workbench.ops import REGISTRY

    mapped = {name for spec in REGISTRY.values() if spec.from_torchvision is not None
              for name in (spec.from_torchvision.transform, *spec.from_torchvision.also_imports)} | set(COMPOSITES)
    compared = {"RandomHorizontalFlip", "RandomVerticalFlip", "RandomGrayscale", "Grayscale", "RandomInvert",
                "RandomSolarize", "RandomPosterize", "RandomEqualize", "RandomAutocontrast", "RandomAdjustSharpness",
                "GaussianBlur", "Normalize", "CenterCrop", "Resize", "RandomRotation", "RandomAffine",
                "RandomChannelPermutation", "GaussianNoise", "RandomCrop", "JPEG"} | {c[0] for c in DRAWN}
    # Compared in tests/test_drawn_sizes.py (sizes and pixels, on every backend).
    compared |= {"RandomShortestSize", "RandomResize", "ScaleJitter", "RandomZoomOut", "ColorJitter"}
    # Compared in tests/test_iou_crop.py (the same windows, pixels and boxes as torchvision for a seed) and
    # tests/test_torchvision_mixing.py (the same images and labels for a seed).
    compared |= {"RandomIoUCrop", "MixUp", "CutMix"}
    # Compared in tests/test_torchvision_policies.py (at each image's draws, on every backend).
    compared |= {"RandAugment", "TrivialAugmentWide", "AutoAugment"}
    containers = {"Compose", "RandomApply", "RandomChoice", "RandomOrder"}
    for name in _classes():
        if name in containers or name in LAYOUT_ONLY:
            continue
        if name in mapped:
            assert name in compared or name in NOT_COMPARED, f"v2.{name} maps but nothing compares its pixels"
        else:
            assert name in _NEAREST, f"v2.{name} neither maps nor names its nearest op"
    assert len(_classes()) >= 60  # the whole module was looked at, not an empty list


def _png_folder(tmp_path, images):
    """The images as lossless PNG files in a folder of their own, in the list's order."""
    folder = tmp_path / "photos"
    folder.mkdir()
    for k, image in enumerate(images):
        cv2.imwrite(str(folder / f"p{k}.png"), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    return folder


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
@pytest.mark.parametrize("mode", ["constant", "symmetric"])
def test_a_padded_crop_exports_as_it_runs_and_moves_boxes(backend, mode, tmp_path, photos):
    """Pad with a margin in the exported program (--save == run), and its boxes: a box around the
    whole image lands where the reported padding and window put the image."""
    from conftest import assert_save_equals_run

    images = [p[:30, :40] for p in photos]
    folder = _png_folder(tmp_path, images)
    chain = wb.Chain(seed=4).add("Pad", size=[32, 36], padding=3, fill=0.5, padding_mode=mode).add("HorizontalFlip",
                                                                                                  p=0.5)
    assert_save_equals_run(chain, folder, tmp_path, seeds=[6], backend=backend, fresh=0)
    result = chain.run(images, backend=backend, boxes=[[[0, 0, 40, 30]]] * 3)
    for box, row in zip(result.boxes, result.params):
        left, _, top, _ = row[0]["padding"]
        x0, y0, _, _ = row[0]["crop_box"]
        expected = np.clip([left - x0, top - y0, left - x0 + 40, top - y0 + 30], 0, [36, 32, 36, 32])
        if row[1]["applied"]:
            expected = np.array([36 - expected[2], expected[1], 36 - expected[0], expected[3]])
        assert box.tolist() == [expected.astype(float).tolist()]


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
def test_a_resize_rounded_down_exports_as_it_runs_and_moves_boxes(backend, tmp_path, photos):
    """rounding='down' in the exported program (--save == run) and in the targets: a box's far corner
    lands on the resized image's far corner, 134 pixels wide, not 135."""
    from conftest import assert_save_equals_run

    folder = _png_folder(tmp_path, photos)
    chain = wb.Chain(seed=2).add("SmallestMaxSize", max_size=101, rounding="down").add("HorizontalFlip", p=0.5)
    assert_save_equals_run(chain, folder, tmp_path, seeds=[4], backend=backend, fresh=0)
    result = chain.run(photos, backend=backend, boxes=[[[0, 0, 200, 150]]] * 3)
    assert [b.tolist() for b in result.boxes] == [[[0.0, 0.0, 134.0, 101.0]]] * 3


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
def test_an_antialiased_resized_crop_exports_as_it_runs(backend, tmp_path, photos):
    from conftest import assert_save_equals_run

    folder = _png_folder(tmp_path, photos)
    chain = wb.Chain(seed=2).add("RandomResizedCrop", size=[48, 64], antialias=True).add("Rotate", degrees=[-9, 9])
    assert_save_equals_run(chain, folder, tmp_path, seeds=[5], backend=backend, fresh=0)
    source = chain.export(backend)
    assert {"kornia": "WbRandomResizedCrop(", "dali": "resize_anchored_window(",
            "albumentations": "WbRandomResizedCrop("}[backend] in source
    if backend == "kornia":  # the loader's batched crop cannot filter: mixed sizes crop image by image
        assert "RESIZED_CROP = None" in source


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
def test_the_libjpeg_codec_exports_as_it_runs(backend, tmp_path, photos):
    """The libjpeg codec in the exported program (Kornia's WbLibjpegJPEG, Albumentations' WbLibjpegCompression
    copied into it): --save == run, at qualities drawn per image; a fresh interpreter, so the copied classes
    must bring what they use."""
    from conftest import assert_save_equals_run

    folder = _png_folder(tmp_path, photos)
    chain = wb.Chain(seed=2).add("JpegCompression", p=0.7, quality=[20, 90], codec="libjpeg")
    assert_save_equals_run(chain, folder, tmp_path, seeds=[4], backend=backend, fresh=1)
