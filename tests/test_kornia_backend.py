"""Kornia backend: each op does what its spec says (checked against numpy), draws are seeded
and reported per sample."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.codegen import emit, load_module

LUMA = np.array([0.299, 0.587, 0.114], np.float32)


def run1(images, op, p=1.0, seed=0, **params):
    return wb.Chain(seed=seed).add(op, p=p, **params).run(images, backend="kornia", device="cpu")


def unfused(images, op, p=1.0, seed=0, **params):
    """The chain of one step run as Kornia's module runs it, on floats (the program's fuse=False)."""
    chain = wb.Chain(seed=seed).add(op, p=p, **params)
    return load_module(emit(chain, "kornia"), "kornia").augment_images(images, seed=seed, fuse=False)[0]


def as_float(images):
    return np.stack(images).astype(np.float32) / 255.0


def test_flips_exact(small_images):
    x = as_float(small_images)
    assert np.array_equal(run1(small_images, "HorizontalFlip").images, x[:, :, ::-1])
    assert np.array_equal(run1(small_images, "VerticalFlip").images, x[:, ::-1])


def test_p_zero_is_identity_and_reported(small_images):
    res = run1(small_images, "Rotate", p=0.0, degrees=[30, 40])
    assert np.array_equal(res.images, as_float(small_images))
    assert all(not row[0]["applied"] for row in res.params)


def test_p_half_applies_to_some_and_leaves_others_untouched(small_images):
    x = as_float(small_images)
    counts = []
    for seed in range(6):
        res = run1(small_images, "HorizontalFlip", p=0.5, seed=seed)
        applied = [row[0]["applied"] for row in res.params]
        counts.append(sum(applied))
        for n, a in enumerate(applied):
            assert np.array_equal(res.images[n], x[n, :, ::-1] if a else x[n])
    assert 0 < sum(counts) < 6 * len(small_images) and len(set(counts)) > 1


# On a CPU a chain's ColorJitter steps (Brightness, Contrast, Saturation, Hue) that meet the images' uint8
# levels run on them (kornia_modules/levels.py): each result is a level, within half a level of Kornia's float
# formula (saturation: a level, its grey being OpenCV's fixed-point luma, rounded).
HALF_LEVEL = 0.5 / 255 + 1e-6


def assert_levels_near(images, expected, atol=HALF_LEVEL):
    np.testing.assert_array_equal(images * 255, np.round(images * 255))  # levels, as OpenCV gives them
    np.testing.assert_allclose(images, expected, atol=atol)


def test_brightness_is_multiplicative(small_images):
    res = run1(small_images, "Brightness", factor=[1.5, 1.5])
    assert_levels_near(res.images, np.clip(as_float(small_images) * 1.5, 0, 1))
    assert all(row[0]["factor"] == pytest.approx(1.5) for row in res.params)


def test_contrast_blends_with_mean_grey(small_images):
    x = as_float(small_images)
    mean = (x @ LUMA).mean(axis=(1, 2))[:, None, None, None]
    res = run1(small_images, "Contrast", factor=[0.5, 0.5])
    assert_levels_near(res.images, np.clip(0.5 * x + 0.5 * mean, 0, 1))


def test_saturation_blends_with_greyscale(small_images):
    x = as_float(small_images)
    grey = (x @ LUMA)[..., None]
    res = run1(small_images, "Saturation", factor=[0.0, 0.0])
    assert_levels_near(res.images, np.repeat(grey, 3, axis=3), atol=1 / 255 + 1e-6)
    res = run1(small_images, "Saturation", factor=[1.5, 1.5])
    assert_levels_near(res.images, np.clip(1.5 * x - 0.5 * grey, 0, 1), atol=1 / 255 + 1e-6)


def test_hue_shift_in_turns():
    red = np.zeros((8, 8, 3), np.uint8)
    red[..., 0] = 255
    out = run1([red], "Hue", shift=[0.5, 0.5]).images[0]  # half a turn: red -> cyan
    np.testing.assert_allclose(out[0, 0], [0, 1, 1], atol=1e-5)
    out = run1([red], "Hue", shift=[1 / 3, 1 / 3]).images[0]  # a third: red -> green
    np.testing.assert_allclose(out[0, 0], [0, 1, 0], atol=1e-5)


def test_color_jitter_fixed_order_equals_separate_steps(small_images):
    params = dict(brightness=[1.2, 1.2], contrast=[0.8, 0.8], saturation=[1.3, 1.3], hue=[0.1, 0.1])
    joint = run1(small_images, "ColorJitter", **params).images
    chain = wb.Chain().add("Brightness", factor=[1.2, 1.2]).add("Contrast", factor=[0.8, 0.8]) \
        .add("Saturation", factor=[1.3, 1.3]).add("Hue", shift=[0.1, 0.1])
    np.testing.assert_allclose(joint, chain.run(small_images).images, atol=1e-6)


def test_grayscale_luma(small_images):
    # Kornia's float luma (the module run step by step); on a CPU's levels OpenCV's, rounded.
    x = as_float(small_images)
    expected = np.repeat((x @ LUMA)[..., None], 3, axis=3)
    np.testing.assert_allclose(unfused(small_images, "Grayscale"), expected, atol=1e-5)
    assert_levels_near(run1(small_images, "Grayscale").images, expected, atol=0.6 / 255)


def test_normalize(small_images):
    mean, std = [0.4, 0.5, 0.6], [0.2, 0.25, 0.3]
    out = run1(small_images, "Normalize", mean=mean, std=std).images
    np.testing.assert_allclose(out, (as_float(small_images) - mean) / np.float32(std), atol=1e-6)


def test_center_crop_is_a_slice(small_images):
    out = run1(small_images, "CenterCrop", size=[64, 80]).images
    assert np.array_equal(out, as_float(small_images)[:, 16:80, 24:104])


def test_resize_half_is_2x2_mean_with_pixel_centres(small_images):
    # On a CPU a first resize runs on the uint8 levels (LEVEL_STEPS): each mean within a level, a level.
    x = as_float(small_images)
    out = run1(small_images, "Resize", size=[48, 64], antialias=False).images
    expected = x.reshape(len(x), 48, 2, 64, 2, 3).mean(axis=(2, 4))
    np.testing.assert_allclose(out, expected, atol=1 / 255 + 1e-6)
    np.testing.assert_allclose(out * 255, np.round(out * 255), atol=1e-4)
    assert run1(small_images, "Resize", size=[50, 70]).images.shape == (len(x), 50, 70, 3)


def test_rotate_90_is_counter_clockwise_quarter_turn(small_images):
    square = [img[:, 16:112].copy() for img in small_images]
    out = run1(square, "Rotate", degrees=[90, 90], interpolation="nearest").images
    np.testing.assert_allclose(out, np.rot90(as_float(square), k=1, axes=(1, 2)), atol=1e-6)
    assert all(row[0]["angle"] == pytest.approx(90.0) for row in run1(square, "Rotate", degrees=[90, 90]).params)


def test_identity_affine_and_full_crop(small_images):
    x = as_float(small_images)
    out = run1(small_images, "Affine", degrees=[0, 0], translate=[0, 0], scale=[1, 1], shear=[0, 0]).images
    np.testing.assert_allclose(out, x, atol=1e-5)
    out = run1(small_images, "RandomResizedCrop", size=[96, 128], scale=[1, 1], ratio=[4 / 3, 4 / 3]).images
    np.testing.assert_allclose(out, x, atol=1e-5)


def test_random_resized_crop_reports_box_within_scale(small_images):
    res = run1(small_images, "RandomResizedCrop", size=[32, 32], scale=[0.3, 0.6], seed=5)
    assert res.images.shape == (len(small_images), 32, 32, 3)
    for row in res.params:
        x0, y0, x1, y1 = row[0]["crop_box"]
        assert 0 <= x0 < x1 <= 128 and 0 <= y0 < y1 <= 96
        area = (x1 - x0) * (y1 - y0) / (96 * 128)
        assert 0.25 <= area <= 0.65


def reference_blur(x, sigma, k):
    r = k // 2
    t = np.arange(-r, r + 1, dtype=np.float64)
    g = np.exp(-t ** 2 / (2 * sigma ** 2))
    g /= g.sum()
    pad = np.pad(x.astype(np.float64), ((0, 0), (r, r), (r, r), (0, 0)), mode="reflect")
    rows = sum(g[i] * pad[:, i:i + x.shape[1], :, :] for i in range(k))
    return sum(g[i] * rows[:, :, i:i + x.shape[2], :] for i in range(k))


def test_gaussian_blur_matches_reference(small_images):
    # Kornia's float blur (the module run step by step); on a CPU's levels OpenCV's fixed-point one, rounded.
    expected = reference_blur(as_float(small_images), 1.5, 7)
    np.testing.assert_allclose(unfused(small_images, "GaussianBlur", sigma=[1.5, 1.5], kernel_size=7), expected,
                               atol=2e-6)
    assert_levels_near(run1(small_images, "GaussianBlur", sigma=[1.5, 1.5], kernel_size=7).images, expected,
                       atol=1.5 / 255)


def test_erase_fills_the_reported_rectangle(small_images):
    x = as_float(small_images)
    res = run1(small_images, "Erase", scale=[0.1, 0.2], value=1.0, seed=2)
    for n, row in enumerate(res.params):
        px, py, w, h = (int(row[0][k]) for k in ("x", "y", "width", "height"))
        mask = np.zeros(x.shape[1:3], bool)
        mask[py:py + h, px:px + w] = True
        assert mask.sum() > 0.05 * mask.size
        assert np.all(res.images[n][mask] == 1.0)
        assert np.array_equal(res.images[n][~mask], x[n][~mask])


def test_seeded_and_reported(small_images, design_chain):
    a = design_chain.run(small_images)
    b = design_chain.run(small_images)
    c = design_chain.run(small_images, seed=8)
    assert np.array_equal(a.images, b.images) and a.params == b.params
    assert not np.array_equal(a.images, c.images) and c.seed == 8 and design_chain.seed == 7
    assert a.images.shape == (len(small_images), 224, 224, 3) and a.images.dtype == np.float32
    for row in a.params:
        assert [r["op"] for r in row] == [s.op for s in design_chain.steps]
        assert -20 <= row[2]["angle"] <= 20 and 0.7 <= row[3]["factor"] <= 1.3
        assert row[0]["applied"] and row[4]["applied"]


def test_params_made_when_read_are_the_runs_whatever_the_chain_becomes(small_images, design_chain):
    """The Kornia run defers its rows until `params` is read (deferred_params): read after the chain was edited
    (its Rotate disabled, its range changed), they are the rows of the run that was made, the rows built at
    once from its records; read twice, the same list."""
    from workbench.backends.records import per_sample_params
    from workbench.plans import kornia_names
    original = wb.Chain.from_dict(design_chain.to_dict())
    res = design_chain.run(small_images)
    assert callable(res._params)
    design_chain.steps[2].enabled = False
    design_chain.steps[2].params["degrees"] = [0.0, 0.0]
    rows = res.params
    assert rows is res.params and all(row[2]["applied"] and row[2]["angle"] != 0 for row in rows)
    module = load_module(emit(original, "kornia"), "kornia")
    out, records = module.augment_images(small_images, seed=original.seed)
    assert rows == per_sample_params(original, records, len(small_images), kornia_names)
    assert np.array_equal(out, res.images)


def test_disabled_step_is_skipped_and_reported(small_images, design_chain):
    design_chain.steps[2].enabled = False
    res = design_chain.run(small_images)
    assert all(row[2] == {"step": 3, "op": "Rotate", "enabled": False, "applied": False} for row in res.params)
    kept = [s.to_dict() for i, s in enumerate(design_chain.steps) if i != 2]
    without = wb.Chain.from_dict({**design_chain.to_dict(), "steps": kept})
    assert np.array_equal(res.images, without.run(small_images).images)


def test_run_leaves_the_callers_random_stream_alone(small_images, design_chain):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    design_chain.run(small_images)
    assert torch.equal(torch.rand(3), expected)


def test_mixed_sizes_use_documented_batching(sample_images, design_chain):
    """Mixed sizes: the steps up to the first size-fixing one run per image, then one batch."""
    res = design_chain.run(sample_images)
    assert res.images.shape == (len(sample_images), 224, 224, 3)
    # Per image, the first step draws from the stream in file order: running image 0 alone
    # with the same seed gives the same crop for it.
    alone = design_chain.run(sample_images[:1])
    assert res.params[0][0]["crop_box"] == alone.params[0][0]["crop_box"]


def test_center_crop_larger_than_image_is_a_clear_error():
    chain = wb.Chain().add("CenterCrop", size=[64, 64])
    with pytest.raises(wb.InputError, match=r"step 1 \(CenterCrop\): size \[64, 64\] is larger than image 2 \(16x16"):
        chain.run([np.zeros((64, 64, 3), np.uint8), np.zeros((16, 16, 3), np.uint8)])
    # After a Resize the crop is checked against the resized size.
    chain = wb.Chain().add("Resize", size=[32, 32]).add("CenterCrop", size=[40, 20])
    with pytest.raises(wb.InputError, match=r"step 2 \(CenterCrop\): size \[40, 20\] is larger than image 1 \(32x32"):
        chain.run([np.zeros((64, 64, 3), np.uint8)])
    assert chain.steps[1].params["size"] == [40, 20]


# A run of 64 images through Resize 224 and Normalize (a 38.5 MB float result: above the 32 MB up to which
# glibc learns to keep freed blocks by itself), warmed up, then the page faults of three more runs; with
# the program's keep_freed_memory, or with it replaced by a no-op.
_FAULTS_SCRIPT = """
import resource, sys
import numpy as np
import workbench as wb
from workbench.codegen import emit, load_module
# (A Contrast after the Normalize: the run ends on floats that torch allocates; a Normalize alone reads the levels
# through float tables into an array numpy allocates, which maps huge pages and faults little either way.)
module = load_module(emit(wb.Chain().add("Resize", size=[224, 224]).add("Normalize").add("Contrast"), "kornia"),
                     "kornia")
if sys.argv[1] == "without":
    module.keep_freed_memory = lambda *args: False
images = [np.full((256, 256, 3), k, np.uint8) for k in range(64)]
for _ in range(3):
    module.augment_images(images)
# (Five runs, the fewest faults counted: with the memory kept a run still faults in part of a batch now and
# then, 2,352 to 7,058 pages, as glibc's per-thread arenas grow; without it every run faults all of it in.)
for _ in range(5):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    module.augment_images(images)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


_GROWTH_SCRIPT = """
import numpy as np
import workbench as wb
from workbench.codegen import emit, load_module
module = load_module(emit(wb.Chain().add("Resize", size=[224, 224]).add("Normalize"), "kornia"), "kornia")
images = [np.full((256, 256, 3), k, np.uint8) for k in range(64)]
def resident():
    return next(int(line.split()[1]) // 1024 for line in open("/proc/self/status") if line.startswith("VmRSS"))
for run in range(30):
    module.augment_images(images)
    if run in (4, 29):
        print(resident())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's (Linux)")
def test_the_memory_a_cpu_run_keeps_does_not_grow_from_run_to_run():
    """The kept memory (keep_freed_memory) is reused, not added to: 25 more runs of a 38 MB result leave the
    process's resident memory within 64 MB of where it stood. (The result allocated by torch, whose aligned
    blocks did not fit the holes the last result left, grew it by 37 MB a run, to 1.5 GB.)"""
    done = subprocess.run([sys.executable, "-c", _GROWTH_SCRIPT], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "KORNIA_INSTALLATION_MODE": "RAISE"})
    assert done.returncode == 0, done.stderr[-2000:]
    early, late = (int(line) for line in done.stdout.split())
    assert late - early < 64, (early, late)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's (Linux)")
def test_a_cpu_run_reuses_the_memory_it_freed_instead_of_faulting_in_fresh_pages():
    def fewest_faults(mode):
        done = subprocess.run([sys.executable, "-c", _FAULTS_SCRIPT, mode], capture_output=True, text=True,
                              timeout=300, env={**os.environ, "KORNIA_INSTALLATION_MODE": "RAISE"})
        assert done.returncode == 0, done.stderr[-2000:]
        return min(int(line) for line in done.stdout.split())

    # The result alone is 9,408 pages of 4 KB: fresh mapped memory faults each in on first touch.
    assert fewest_faults("without") > 9_000
    assert fewest_faults("with") < 1_000
