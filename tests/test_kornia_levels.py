"""On a CPU, ColorJitter steps that meet the images' uint8 levels run on them with OpenCV
(workbench/runtime/kornia_modules/levels.py): each adjustment against Kornia's own float function,
the chain against the same module's float run (fuse=False, the same draws), and where it applies."""
import cv2
import kornia
import numpy as np
import pytest
import torch

import workbench as wb
from workbench.backends.kornia import levels_head
from workbench.codegen import emit, load_module
from workbench.runtime.kornia_modules import levels

LEVEL = 1 / 255


@pytest.fixture(scope="module")
def photos(sample_images):
    return [np.ascontiguousarray(image[:200, :200]) for image in sample_images]


def kornia_float(k, image, factor):
    """Kornia's own adjustment `k` (0 brightness, 1 contrast, 2 saturation, 3 hue in turns) of a uint8
    HxWx3 image, as floats in [0, 1] HxWx3."""
    x = torch.from_numpy(image).permute(2, 0, 1)[None].float() / 255.0
    f = torch.tensor([factor])
    out = (kornia.enhance.adjust_brightness_accumulative(x, f),
           kornia.enhance.adjust_contrast_with_mean_subtraction(x, f),
           kornia.enhance.adjust_saturation_with_gray_subtraction(x, f),
           kornia.enhance.adjust_hue(x, f * 2 * np.pi))[k]
    return out.clamp(0, 1)[0].permute(1, 2, 0).numpy()


# Each adjustment's bound against Kornia's float result, in levels: half a level (a rounding) for the
# lookup tables and OpenCV's float HSV; saturation's matrix goes through cv2.transform's 8-bit fixed point
# (measured 0.74 on the sample photos).
BOUNDS = {0: 0.5, 1: 0.5, 2: 0.75, 3: 0.5}
FACTORS = {0: (0.6, 1.37), 1: (0.55, 1.4), 2: (0.0, 0.6, 1.45), 3: (-0.5, -0.13, 0.021, 0.3)}


@pytest.mark.parametrize("k", sorted(BOUNDS))
def test_each_adjustment_on_levels_is_kornias_within_its_bound(k, photos):
    for factor in FACTORS[k]:
        for image in photos:
            ours = levels.LEVEL_ADJUSTMENTS[k](np.ascontiguousarray(image), factor)
            assert ours.dtype == np.uint8 and ours.shape == image.shape
            error = np.abs(ours / 255.0 - kornia_float(k, image, factor)).max()
            assert error <= BOUNDS[k] * LEVEL + 1e-6, (k, factor, error * 255)


def module_of(chain):
    return load_module(emit(chain, "kornia"), "kornia")


def test_a_colour_jitter_after_levels_runs_on_them_within_its_bound_with_the_same_draws(photos):
    """RandomResizedCrop and HorizontalFlip keep levels, ColorJitter adjusts them: the preview's values
    are levels; against the float run of the same draws (Kornia's float resize too) at most 5 levels
    (contrast and saturation widen an earlier rounding, a hue near grey moves far), 0.5 on average, on
    the sample photos (measured: 4.3 and 0.45)."""
    chain = (wb.Chain(seed=3).add("RandomResizedCrop", size=[96, 96]).add("HorizontalFlip")
             .add("ColorJitter", p=0.7, brightness=[0.6, 1.4], contrast=[0.6, 1.4], saturation=[0.6, 1.4],
                  hue=[-0.1, 0.1]))
    module = module_of(chain)
    ours, records = module.augment_images(photos, seed=3)
    floats, float_records = module.augment_images(photos, seed=3, fuse=False)
    np.testing.assert_array_equal(ours * 255, np.round(ours * 255))
    for a, b in zip(records, float_records, strict=True):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    # p = 0.7 left some samples out: they are the cropped, flipped levels, unadjusted.
    applied = records[2]["batch_prob"].astype(bool)
    assert applied.any() and not applied.all()
    unadjusted, _ = module_of(wb.Chain(seed=3).add("RandomResizedCrop", size=[96, 96]).add("HorizontalFlip")) \
        .augment_images(photos, seed=3)
    np.testing.assert_array_equal(ours[~applied], unadjusted[~applied])
    difference = np.abs(ours[applied] - floats[applied])
    assert 0 < difference.max() <= 5 * LEVEL and difference.mean() <= 0.5 * LEVEL, \
        (difference.max() * 255, difference.mean() * 255)


LOOKUPS = [("Gamma", {"gamma": [0.5, 2.0]}), ("Invert", {}), ("Solarize", {"threshold": [0.3, 0.7]}),
           ("Posterize", {"bits": [2, 6]})]


@pytest.mark.parametrize("op,params", LOOKUPS, ids=[op for op, _ in LOOKUPS])
def test_a_pointwise_colour_step_on_levels_is_its_float_arithmetic_rounded(op, params, photos):
    """Gamma, Invert, Solarize and Posterize on levels look their float values up (a table of the 256
    levels): levels, within half a level of Kornia's float step on the same draws; p = 0.5 leaves some
    samples as they came."""
    chain = wb.Chain(seed=8).add(op, p=0.5, **params)
    module = module_of(chain)
    ours, records = module.augment_images(photos, seed=8)
    floats, _ = module.augment_images(photos, seed=8, fuse=False)
    np.testing.assert_array_equal(ours * 255, np.round(ours * 255))
    np.testing.assert_allclose(ours, floats, atol=0.5 * LEVEL + 1e-6)
    applied = records[0]["batch_prob"].astype(bool)
    assert applied.any() and not applied.all()
    np.testing.assert_array_equal(ours[~applied] * 255, np.stack(photos)[~applied])


def test_colour_steps_run_on_levels_up_to_the_first_other_one_then_floats(photos):
    """Brightness (a ColorJitter) and Gamma at the chain's head run on levels; the RGBShift after them, in
    the same colour run, on floats: the head's result is levels, the chain's is not; each within its
    rounding of the float run with the same draws."""
    head = wb.Chain(seed=5).add("Brightness", factor=[1.2, 1.2]).add("Gamma")
    chain = head.copy().add("RGBShift")
    module = module_of(chain)
    assert [len(m) for _, m in module.fusion_segments(module.build_augmentation())] == [3]
    levels_only, _ = module_of(head).augment_images(photos, seed=5)
    np.testing.assert_array_equal(levels_only * 255, np.round(levels_only * 255))
    ours, _ = module.augment_images(photos, seed=5)
    floats, _ = module.augment_images(photos, seed=5, fuse=False)
    assert not np.array_equal(ours * 255, np.round(ours * 255))
    assert 0 < np.abs(ours - floats).max() <= 2 * LEVEL


def test_only_a_cpu_uint8_rgb_batch_and_kornias_own_colorjitter_run_on_levels():
    import kornia.augmentation as K

    jitter = K.ColorJitter(0.2, 0.2, 0.2, 0.1)
    rgb = torch.zeros(2, 3, 4, 4, dtype=torch.uint8)
    assert levels.jitter_on_levels(jitter, rgb)
    assert not levels.jitter_on_levels(jitter, rgb.float())  # floats (after a warp or a Normalize)
    assert not levels.jitter_on_levels(jitter, torch.zeros(2, 1, 4, 4, dtype=torch.uint8))  # one channel
    assert not levels.jitter_on_levels(K.RandomGamma((0.5, 1.5)), rgb)
    # The workbench's ColorJitter with an order drawn per sample (order "random") keeps Kornia's floats.
    random_order = module_of(wb.Chain().add("ColorJitter", order="random")).build_augmentation()[0]
    assert not levels.jitter_on_levels(random_order, rgb)


def test_jitter_levels_reads_any_layout_and_leaves_the_batch_alone():
    generator = torch.Generator().manual_seed(0)
    batch = torch.randint(0, 256, (3, 3, 8, 9), dtype=torch.uint8, generator=generator)
    before = batch.clone()
    drawn = {"brightness_factor": torch.tensor([1.1, 0.9, 1.3]), "hue_factor": torch.tensor([0.1, -0.2, 0.0])}
    gate = torch.tensor([True, False, True]).view(3, 1, 1, 1)
    out = levels.jitter_levels(batch, drawn, gate, (0, 3))
    assert torch.equal(batch, before)
    channels_last = levels.jitter_levels(batch.contiguous(memory_format=torch.channels_last), drawn, gate, (0, 3))
    assert torch.equal(out, channels_last) and torch.equal(out[1], batch[1])
    brightness, hue = float(drawn["brightness_factor"][0]), float(drawn["hue_factor"][0])  # (float32 values)
    expected = levels.hue_levels(levels.brightness_levels(batch[0].permute(1, 2, 0).numpy().copy(), brightness), hue)
    np.testing.assert_array_equal(out[0].permute(1, 2, 0).numpy(), expected)


def run_steps(module, batch, seed):
    """The module's fused steps on `batch` (uint8 levels, or the same values as floats) with `seed`."""
    module.seed_generators(seed, torch.device("cpu"))
    with torch.no_grad():
        return module.apply_steps(module.build_augmentation(), batch)


@pytest.fixture(scope="module")
def large(sample_images):
    """The sample photos' first 288 x 288."""
    return [np.ascontiguousarray(image[:288, :288]) for image in sample_images]


GEOMETRY = {  # fused geometric runs OpenCV resamples: no window or frame, a window and its frame, a frame
    "rotate_flip": lambda: wb.Chain(seed=1).add("Rotate", degrees=[-30, 30]).add("HorizontalFlip"),
    "crop_rotate": lambda: wb.Chain(seed=2).add("RandomResizedCrop", size=[256, 256]).add("Rotate", degrees=[-30, 30]),
    "flip_affine": lambda: wb.Chain(seed=3).add("HorizontalFlip").add("Affine"),
    "resize_rotate": lambda: wb.Chain(seed=5).add("Resize", size=[260, 270], antialias=False).add("Rotate"),
    "small_rotate_flip": lambda: wb.Chain(seed=4).add("Rotate", degrees=[-30, 30]).add("HorizontalFlip"),
}


@pytest.mark.parametrize("name", sorted(GEOMETRY))
def test_a_fused_warp_on_levels_is_the_float_warp_rounded(name, large):
    """OpenCV's warp of the levels against the same fused run on the same values as floats (the same draws):
    a level each, within 0.6 of a level of the float's (a rounding of fixed-point weights: 0.503 measured),
    and not the float's; small images (96 x 96) too."""
    chain = GEOMETRY[name]()
    module = module_of(chain)
    assert [kind for kind, _ in module.fusion_segments(module.build_augmentation())] == ["geometry"]
    images = [np.ascontiguousarray(image[:96, :96]) for image in large] if name.startswith("small") else large
    batch = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2)
    ours, floats = run_steps(module, batch, chain.seed), run_steps(module, batch.float() / 255.0, chain.seed)
    assert torch.equal(ours * 255, (ours * 255).round())
    difference = (ours - floats).abs()
    assert 0 < difference.max() <= 0.6 * LEVEL, difference.max() * 255


def test_a_nearest_warp_on_levels_picks_the_float_warps_pixels_but_at_rare_ties(large):
    chain = wb.Chain(seed=4).add("Rotate", interpolation="nearest").add("VerticalFlip")
    module = module_of(chain)
    batch = torch.from_numpy(np.stack(large)).permute(0, 3, 1, 2)
    ours, floats = run_steps(module, batch, chain.seed), run_steps(module, batch.float() / 255.0, chain.seed)
    assert torch.equal(ours * 255, (ours * 255).round())
    assert (ours != floats).any(dim=1).float().mean() < 1e-4  # a pixel in ten thousand or fewer


def test_what_opencv_cannot_warp_stays_floats(large):
    """A perspective and a frame that is no box (a translation after a shear) resample floats: the run's values
    are the float run's, bit for bit."""
    for images, chain in ((large, wb.Chain(seed=6).add("Perspective").add("HorizontalFlip")),
                          (large, wb.Chain(seed=7).add("Shear").add("Translate"))):
        batch = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2)
        module = module_of(chain)
        ours, floats = run_steps(module, batch, chain.seed), run_steps(module, batch.float() / 255.0, chain.seed)
        assert torch.equal(ours, floats)


FILTERS = [("GaussianBlur", {"kernel_size": [3, 9], "sigma": [0.1, 2.0]}, 1.5),
           ("GaussianBlur", {"kernel_size": [9, 9], "sigma": [0.1, 2.0]}, 1.5), ("Grayscale", {}, 0.6)]


@pytest.mark.parametrize("op,params,bound", FILTERS, ids=["blur-sizes", "blur-9", "grey"])
def test_a_blur_or_grey_on_levels_is_opencvs_within_its_bound(op, params, bound, photos):
    """cv2.GaussianBlur (fixed-point 8-bit kernels; measured 1.19 levels at most) and cv2.cvtColor's luma
    (0.50) on the levels, against Kornia's float step on the same draws; p = 0.7 leaves some samples."""
    chain = wb.Chain(seed=2).add(op, p=0.7, **params)
    module = module_of(chain)
    ours, records = module.augment_images(photos, seed=2)
    floats, _ = module.augment_images(photos, seed=2, fuse=False)
    np.testing.assert_array_equal(ours * 255, np.round(ours * 255))
    difference = np.abs(ours - floats)
    assert 0 < difference.max() <= bound * LEVEL, difference.max() * 255
    applied = records[0]["batch_prob"].astype(bool)
    assert applied.any() and not applied.all()
    np.testing.assert_array_equal(ours[~applied] * 255, np.stack(photos)[~applied])


def test_a_self_supervised_view_stays_on_levels_up_to_its_normalize(photos):
    """RandomResizedCrop, flip, ColorJitter, Grayscale, GaussianBlur on levels, then Normalize, which reads
    the levels through float tables: the levels head is all six steps, and the result is the Normalize of
    levels."""
    chain = (wb.Chain(seed=9).add("RandomResizedCrop", size=[96, 96]).add("HorizontalFlip").add("ColorJitter", p=0.8)
             .add("Grayscale", p=0.2).add("GaussianBlur", p=0.5, kernel_size=[9, 9]).add("Normalize"))
    module = module_of(chain)
    assert levels_head(module, module.build_augmentation(), "cpu") == 6
    ours, _ = module.augment_images(photos, seed=9)
    mean, std = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)
    levels = (ours * std + mean) * 255
    np.testing.assert_allclose(levels, np.round(levels), atol=1e-3)


@pytest.mark.parametrize("channels", [1, 3])
def test_float_tables_give_the_float_steps_values_from_the_levels(channels):
    """No step (the levels converted), a Normalize (alone, one table for every sample) and a Gamma with p = 0.6
    before it (a table per sample) looked up from the levels: the values of the same steps' float arithmetic on
    the converted batch, the conversion's and the Normalize's bit for bit (each value is its level's), the
    Gamma's pow to a float's last bit."""
    import kornia.augmentation as K

    from workbench.runtime.kornia_modules.fusion import fused_colour, fusion_gate

    generator = torch.Generator().manual_seed(5)
    batch = torch.randint(0, 256, (6, channels, 20, 17), dtype=torch.uint8, generator=generator)[..., 2:18, 1:]
    normalize = K.Normalize(torch.rand(channels, generator=generator), torch.rand(channels, generator=generator) + 0.1)
    gamma = K.RandomGamma((0.5, 1.8), p=0.6)
    torch.manual_seed(5)
    drawn = gamma.forward_parameters(batch.shape)
    gate = fusion_gate(drawn)
    assert gate is not None and bool(gate.any()) and not bool(gate.all())
    for modules, draws, gates, atol in (([], [], [], 0.0), ([normalize], [{}], [None], 0.0),
                                        ([gamma, normalize], [drawn, {}], [gate, None], 2e-7)):
        ours = levels.float_tables_levels(batch, modules, draws, gates)
        floats = fused_colour(batch.float() / 255.0, modules, draws, gates, [None] * len(modules))
        assert ours.dtype == torch.float32 and ours.is_contiguous(memory_format=torch.channels_last)
        torch.testing.assert_close(ours, floats, rtol=0.0, atol=atol)


def test_a_stretch_on_levels_runs_whole_with_the_values_of_its_chunks(photos):
    """Resize, CenterCrop and Normalize stay on levels to the float tables (stays_on_levels): the whole batch
    at once gives what the stretch gave a chunk at a time, bit for bit, and a chain whose colour run needs
    floats before its end is chunked as before."""
    chain = wb.Chain(seed=4).add("Resize", size=[160, 160]).add("CenterCrop", size=[128, 128]).add("Normalize")
    images = [photos[k % len(photos)] for k in range(40)]  # more than a 12 MB chunk of 200^2 floats (26 of them)
    batch = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2)
    assert_whole_is_chunks(chain, images)
    contrast = module_of(wb.Chain(seed=4).add("Resize", size=[160, 160]).add("Normalize").add("Contrast"))
    plans, _ = contrast.fused_plans(contrast.fusion_segments(contrast.build_augmentation()), batch.shape,
                                    batch.device, batch.dtype)
    assert not contrast.stays_on_levels(plans, batch)


CLAMPED = {  # fused geometric runs whose first step resizes a window (a crop's, the whole image), then rotates
    "crop_rotate": GEOMETRY["crop_rotate"],
    "resize_rotate": GEOMETRY["resize_rotate"],
}


@pytest.mark.parametrize("name", sorted(CLAMPED))
def test_a_window_with_a_rim_warps_as_the_window_with_its_edge_pixels_repeated(name, large):
    """window_source's rim of edge pixels under a constant border gives OpenCV's BORDER_REPLICATE warp of the
    window (the positions read stay within half a pixel of it) but for rare roundings a level apart (the map
    shifted by one more pixel: 1 pixel of 786,432 in crop_rotate), and every image takes the rim."""
    chain = CLAMPED[name]()
    module = module_of(chain)
    batch = torch.from_numpy(np.stack(large)).permute(0, 3, 1, 2)
    window_source, borders = module.window_source, []

    def counted(*arguments):
        source, matrix, border = window_source(*arguments)
        borders.append(border)
        return source, matrix, border

    module.window_source = counted
    rimmed = run_steps(module, batch, chain.seed)
    assert borders == [cv2.BORDER_CONSTANT] * len(large)

    def replicated(image, window, matrix, mask, size):
        x0, x1, y0, y1 = window
        return image[y0:y1 + 1, x0:x1 + 1], module.shifted(matrix, x0, y0), cv2.BORDER_REPLICATE

    module.window_source = replicated
    apart = (rimmed - run_steps(module, batch, chain.seed)).abs()
    assert apart.max() <= 1.0001 * LEVEL and (apart > 0).any(dim=1).float().mean() < 1e-4


def test_a_window_whose_outputs_read_beyond_its_rim_keeps_the_repeated_edges():
    """A map that reads a pixel or more past the window (no frame masks those outputs) takes the window with
    BORDER_REPLICATE: the edge pixel repeated, not the rim's constant 0 past it."""
    image = np.arange(1, 65, dtype=np.uint8).reshape(8, 8, 1).repeat(3, 2)
    shift = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 2.0], [0.0, 0.0, 1.0]])  # output (x, y) reads (x, y + 2)
    source, matrix, border = levels.window_source(image, (2, 5, 2, 5), shift, None, (6, 6))
    assert border == cv2.BORDER_REPLICATE
    warped = cv2.warpAffine(source, matrix[:2], (6, 6), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                            borderMode=border)
    assert warped[0, 0, 0] == image[2, 2, 0] and warped[5, 5, 0] == image[5, 5, 0]


def test_a_first_warp_on_levels_keeps_the_stretch_whole_with_the_values_of_its_chunks(large):
    """A stretch whose first run is a warp that resample_levels takes stays on levels (level_warp_plan) and runs
    whole: the values it gave a chunk at a time, bit for bit."""
    chain = wb.Chain(seed=9).add("RandomResizedCrop", size=[200, 200]).add("Rotate").add("Contrast") \
        .add("Normalize")
    plans = assert_whole_is_chunks(chain, [large[k % len(large)] for k in range(40)])
    assert [kernel.__name__ for kernel, *_ in plans] == ["fused_resample", "fused_colour"]


def assert_whole_is_chunks(chain, images):
    """`chain`'s program keeps its stretch whole on the uint8 batch of `images` (stays_on_levels), which chunks would
    cut (fusion_chunk), and gives the values it gives a chunk at a time, bit for bit. Returns the plans."""
    module = module_of(chain)
    batch = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2)
    plans, largest = module.fused_plans(module.fusion_segments(module.build_augmentation()), batch.shape,
                                        batch.device, batch.dtype)
    assert module.stays_on_levels(plans, batch)
    whole, _ = module.augment_images(images, seed=chain.seed)
    module.stays_on_levels = lambda plans, batch: False
    assert module.fusion_chunk(largest, torch.device("cpu")) < len(images)
    chunked, _ = module.augment_images(images, seed=chain.seed)
    np.testing.assert_array_equal(whole, chunked)
    return plans


@pytest.mark.parametrize("resample", ["bilinear", "nearest"])
def test_a_random_resized_crop_on_levels_resizes_its_windows_as_kornia_does(resample, large):
    """OpenCV's resize of each window (sliced_crops_levels) against Kornia's crop_by_indices with the same draws,
    windows that shrink and grow: nearest picks the same pixels; bilinear is within 0.8 of a level of Kornia's
    float resize (0.77 measured; torch's own uint8 resize is within 0.99) and a level of torch's uint8 one."""
    torch.manual_seed(0)
    crop = kornia.augmentation.RandomResizedCrop((224, 224), resample=resample.upper(), align_corners=False)
    batch = torch.from_numpy(np.stack(large)).permute(0, 3, 1, 2)
    drawn = crop.forward_parameters(batch.shape)
    sides = drawn["src"][:, 1, 0] - drawn["src"][:, 0, 0] + 1
    assert (sides < 224).any() and (sides > 224).any()
    assert levels.sliced_crop_on_levels(crop, batch)
    ours = levels.sliced_crops_levels(batch, drawn["src"], (224, 224), resample).float()
    assert ours.is_contiguous(memory_format=torch.channels_last)
    floats = crop.apply_transform(batch.float(), drawn, crop.flags)
    uint8 = crop.apply_transform(batch, drawn, crop.flags).float()
    if resample == "nearest":
        assert torch.equal(ours, floats)
    else:
        assert 0 < (ours - floats).abs().max() <= 0.8 and (ours - uint8).abs().max() <= 1.0


def test_only_unfiltered_half_pixel_crops_of_cpu_levels_resize_with_opencv():
    """Kornia's align_corners=True, the workbench's antialiased or bicubic crops, floats and GPU batches keep
    Kornia's (or the workbench's) own resize."""
    from workbench.runtime.kornia_modules.geometric import WbRandomResizedCrop
    levels_batch = torch.zeros(1, 3, 9, 9, dtype=torch.uint8)
    K = kornia.augmentation
    assert levels.sliced_crop_on_levels(WbRandomResizedCrop((8, 8), antialias=False), levels_batch)
    for crop in (K.RandomResizedCrop((8, 8)), WbRandomResizedCrop((8, 8)),
                 WbRandomResizedCrop((8, 8), resample="BICUBIC", antialias=False),
                 K.RandomResizedCrop((8, 8), align_corners=False, cropping_mode="resample")):
        assert not levels.sliced_crop_on_levels(crop, levels_batch), crop
    assert not levels.sliced_crop_on_levels(K.RandomResizedCrop((8, 8), align_corners=False), levels_batch.float())


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("flip", ["RandomHorizontalFlip", "RandomVerticalFlip"])
def test_a_flip_of_some_samples_on_levels_is_kornias(flip, channels, photos):
    """A flip whose p leaves samples out (apply_to_rows) flips the others' levels with cv2.flip: Kornia's
    forward with the same draws, bit for bit, and the batch given is left alone."""
    module = module_of(wb.Chain().add("HorizontalFlip"))
    step = getattr(kornia.augmentation, flip)(p=0.5)
    batch = torch.from_numpy(np.stack(photos)).permute(0, 3, 1, 2)[:, :channels]
    before = batch.clone()
    torch.manual_seed(3)
    drawn = step.forward_parameters(batch.shape)
    rows = module.rows_to_apply(step, drawn, batch)
    assert rows is not None and 0 < len(rows) < len(photos)
    ours = module.apply_to_rows(step, drawn, batch, rows)
    assert ours.dtype == torch.uint8 and torch.equal(batch, before)
    assert torch.equal(ours.float(), step(batch.float(), params=drawn))


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("horizontal", [True, False])
def test_a_flip_of_levels_a_step_before_made_flips_their_rows_in_place(horizontal, channels, photos):
    """An owned batch (made by a kernel before, laid out N x H x W x C) is flipped in place, its other rows
    untouched: the values of the flip into a new batch."""
    batch = torch.from_numpy(np.stack(photos)).permute(0, 3, 1, 2)[:, :channels].contiguous(
        memory_format=torch.channels_last)
    rows = torch.tensor([0, 2, 3])
    expected = levels.flips_levels(batch, rows, horizontal)
    assert expected.data_ptr() != batch.data_ptr()
    before = batch.clone()
    ours = levels.flips_levels(batch, rows, horizontal, owned=True)
    assert ours is batch and torch.equal(ours, expected)
    assert torch.equal(ours[1], before[1]) and not torch.equal(ours[0], before[0])


@pytest.mark.parametrize("first", [("HorizontalFlip", {"p": 0.5}), ("CenterCrop", {"size": [120, 140]}),
                                   ("Resize", {"size": [120, 140]}), ("RandomResizedCrop", {"size": [120, 140]})])
def test_a_flip_after_levels_writes_into_no_batch_but_the_ones_the_steps_made(first, photos):
    """A flip of the batch given, or of a CenterCrop's view of it, writes into a new batch; after a flip, a resize
    or a resized crop (a new batch) it flips in place. Either way the batch given keeps its values and the
    result is the unfused float run's."""
    op, params = first
    chain = wb.Chain(seed=4).add(op, **params).add("HorizontalFlip", p=0.5).add("VerticalFlip", p=0.5)
    module = module_of(chain)
    batch = torch.from_numpy(np.stack(photos)).permute(0, 3, 1, 2)
    before = batch.clone()
    ours = run_steps(module, batch, 4)
    assert torch.equal(batch, before)
    module.seed_generators(4, torch.device("cpu"))
    with torch.no_grad():
        floats = module.apply_steps(module.build_augmentation(), batch, fuse=False)
    bound = 0 if op == "CenterCrop" else 1.5 / 255  # (measured 1.0: a resize on levels rounds to them)
    assert (ours - floats).abs().max() <= bound


def test_a_run_of_colour_steps_on_levels_in_one_pass_is_the_steps_one_after_another(photos):
    """adjusted_levels runs two ColorJitters and a Gamma, each with its own gate, image by image in one copy of
    the batch: the values of the three steps run one after another, bit for bit, for samples that any,
    all or none of them apply to."""
    K = kornia.augmentation
    batch = torch.from_numpy(np.stack(photos[:6])).permute(0, 3, 1, 2)
    torch.manual_seed(5)
    first, second = K.ColorJitter(0.3, 0.3, 0.3, 0.05), K.ColorJitter(0.2, 0.0, 0.4, 0.1)
    gamma = K.RandomGamma((0.6, 1.5))
    draws = [step.forward_parameters(batch.shape) for step in (first, second, gamma)]
    gates = [torch.tensor(g, dtype=torch.bool).view(-1, 1, 1, 1)
             for g in ([1, 1, 0, 0, 1, 0], [1, 0, 1, 0, 0, 1], [0, 1, 1, 0, 1, 1])]
    one_by_one = levels.jitter_levels(batch, draws[0], gates[0], (0, 1, 2, 3))
    one_by_one = levels.jitter_levels(one_by_one, draws[1], gates[1], (2, 0, 3))
    one_by_one = levels.lookup_levels(one_by_one, gamma, draws[2], gates[2])
    together = levels.adjusted_levels(batch, [levels.jitter_adjustment(draws[0], gates[0], (0, 1, 2, 3), 6),
                                              levels.jitter_adjustment(draws[1], gates[1], (2, 0, 3), 6),
                                              levels.lookup_adjustment(batch, gamma, draws[2], gates[2])])
    assert torch.equal(together, one_by_one)
    assert torch.equal(together[3], batch[3]) and not torch.equal(together[0], batch[0])


def test_a_resize_to_the_images_own_size_is_the_images_themselves(photos):
    """On levels a Resize to the batch's own size hands the batch on (no copy), and the chain gives what it gives
    without the step."""
    height, width = photos[0].shape[:2]
    module = module_of(wb.Chain().add("Resize", size=[height, width]))
    step = module.build_augmentation()[0]
    batch = torch.from_numpy(np.stack(photos)).permute(0, 3, 1, 2)
    assert module.transformed(step, batch, {}) is batch
    with_resize = wb.Chain(seed=2).add("Resize", size=[height, width]).add("CenterCrop", size=[150, 160]) \
        .add("Normalize")
    without = wb.Chain(seed=2).add("CenterCrop", size=[150, 160]).add("Normalize")
    np.testing.assert_array_equal(with_resize.run(photos).images, without.run(photos).images)


@pytest.mark.parametrize("steps", [
    [("Resize", {"size": [96, 90]}), ("CenterCrop", {"size": [80, 64]}), ("Normalize", {})],
    [("Resize", {"size": [120, 100], "antialias": False}), ("HorizontalFlip", {"p": 0.5}),
     ("Brightness", {"p": 0.5})],
    [("Resize", {"size": [64, 64], "interpolation": "nearest"}), ("Rotate", {})],
    [("Resize", {"size": [50, 70]})],
], ids=["antialiased-crop-normalize", "plain-flip-brightness", "nearest-rotate", "alone"])
def test_a_first_shrinking_resize_stacks_and_resizes_its_parts_as_the_stacked_batch_would(steps, photos):
    """augment_images lets a first Resize that shrinks stack and resize the images a part a core (resized_images):
    the images and every step's draws are those of the stacked batch's run, bit for bit, the draws after it
    included; the caller's images are untouched."""
    chain = wb.Chain(seed=4)
    for op, params in steps:
        chain.add(op, **params)
    module = module_of(chain)
    images = photos[:5]
    before = [image.copy() for image in images]
    augmentation = module.build_augmentation()
    assert module.leading_resize(augmentation, images, torch.device("cpu")) is augmentation[0]
    parted, parted_records = module.augment_images(images, seed=4)
    taken, module.leading_resize = module.leading_resize, lambda *args: None
    try:
        stacked, stacked_records = module.augment_images(images, seed=4)
    finally:
        module.leading_resize = taken
    np.testing.assert_array_equal(parted, stacked)
    assert len(parted_records) == len(stacked_records) == len(steps)
    for ours, theirs in zip(parted_records, stacked_records):
        assert list(ours) == list(theirs)
        for key in theirs:
            np.testing.assert_array_equal(ours[key], theirs[key])
    assert all(np.array_equal(a, b) for a, b in zip(images, before))


def test_only_a_first_resize_that_shrinks_every_image_of_one_size_on_levels_is_resized_in_parts(photos):
    """Not where it enlarges or keeps the size, is gated (p < 1), comes second, runs on a GPU, the images are not
    uint8, or the chain runs per image (a step draws each sample's size); nor for mixed sizes or without fusing
    (augment_images asks only then)."""
    cpu = torch.device("cpu")

    def first_of(chain, images=photos[:3], device=cpu, p=1.0):
        module = module_of(chain)
        augmentation = module.build_augmentation()
        augmentation[0].p = p  # (a Resize must apply to every sample: a hand-built module's gate)
        return module.leading_resize(augmentation, images, device) is not None

    assert first_of(wb.Chain().add("Resize", size=[100, 100]))
    assert first_of(wb.Chain().add("Resize", size=[100, 250]))  # (fewer pixels in all)
    assert not first_of(wb.Chain().add("Resize", size=[300, 300]))
    assert not first_of(wb.Chain().add("Resize", size=[200, 200]))
    assert not first_of(wb.Chain().add("Resize", size=[100, 100]), p=0.5)
    assert not first_of(wb.Chain().add("HorizontalFlip").add("Resize", size=[100, 100]))
    assert not first_of(wb.Chain().add("Resize", size=[100, 100]), device=torch.device("cuda"))
    assert not first_of(wb.Chain().add("Resize", size=[100, 100]), images=[p / 255.0 for p in photos[:3]])
    assert not first_of(wb.Chain().add("Resize", size=[100, 100]).add("RandomResize"))
    chain = wb.Chain(seed=1).add("Resize", size=[100, 100]).add("Normalize")
    module = module_of(chain)
    calls = []
    taken = module.leading_resize
    module.leading_resize = lambda *args: calls.append(args) or taken(*args)
    module.augment_images([photos[0], photos[1][:150]], seed=1)
    module.augment_images(photos[:2], seed=1, fuse=False)
    assert calls == []
    module.augment_images(photos[:2], seed=1)
    assert len(calls) == 1


@pytest.mark.parametrize("size", [(150, 160), (151, 99), (200, 200), (1, 1)])
def test_a_centre_crop_on_levels_is_kornias_window_as_a_view(size, photos):
    """transformed() cuts a CenterCrop's window out of levels as Kornia's slice mode does, odd sides and the whole
    image included, without copying it (the batch's own memory)."""
    module = module_of(wb.Chain().add("CenterCrop", size=list(size)))
    crop = module.build_augmentation()[0]
    batch = torch.from_numpy(np.stack(photos[:3])).permute(0, 3, 1, 2)
    drawn = module.step_draws(crop, batch.shape)
    window = module.transformed(crop, batch, drawn)
    expected = crop.apply_transform(batch, drawn, crop.flags)
    assert window.shape == expected.shape and torch.equal(window, expected)
    assert window.untyped_storage().data_ptr() == batch.untyped_storage().data_ptr()


def test_float_tables_of_a_window_are_its_copys(photos):
    """float_tables_levels on a window of interleaved levels (a crop's view): the values of the same window
    copied first, bit for bit, with no step, one table for all samples (a Normalize) and one per sample (a
    jitter)."""
    import kornia.augmentation as K

    batch = torch.from_numpy(np.stack(photos[:5])).permute(0, 3, 1, 2)  # (5: not the jitter's 4 orders)
    window = batch[..., 17:180, 5:171]
    assert window.stride(1) == 1 and not window.is_contiguous(memory_format=torch.channels_last)
    copied = window.contiguous(memory_format=torch.channels_last)
    normalize = K.Normalize(torch.tensor([0.4, 0.5, 0.6]), torch.tensor([0.2, 0.25, 0.3]))
    jitter = K.ColorJitter(brightness=0.3, p=1.0)
    torch.manual_seed(0)
    drawn = jitter.forward_parameters(window.shape)
    for modules, draws in (([], []), ([normalize], [{}]), ([jitter, normalize], [drawn, {}])):
        gates = [None] * len(modules)
        ours = levels.float_tables_levels(window, modules, draws, gates)
        assert torch.equal(ours, levels.float_tables_levels(copied, modules, draws, gates))
        for n in range(len(window)):  # (each sample alone: its own table, whichever path the batch takes)
            alone = [{k: v[n:n + 1] if torch.is_tensor(v) and v.dim() and len(v) == len(window) else v
                      for k, v in d.items()} for d in draws]
            assert torch.equal(ours[n:n + 1], levels.float_tables_levels(window[n:n + 1], modules, alone, gates))
    assert ours[0].unique().numel() > 50  # (photos, not a flat image)
    assert not torch.equal(levels.float_tables_levels(window, [normalize], [{}], [None]),
                           levels.float_tables_levels(batch[..., 17:180, 6:172], [normalize], [{}], [None]))
