"""Fusion in the Kornia path: runs of geometric steps resample once, runs of colour steps run as
one pass; the draws, their records and p gating are the step-by-step run's; the images agree
within the stated tolerance (one interpolation instead of several); a resize alone among exact
steps is not fused, so the flips, crops and quarter turns around it stay exact."""
import math
import warnings

import kornia
import kornia.augmentation as K
import numpy as np
import pytest
import torch
import torch._dynamo

import workbench as wb
from workbench.backends.kornia import fusion_bounds, levels_head
from workbench.codegen import emit, load_module
from workbench.errors import ChainError
from workbench.runtime.kornia_modules.color import contrast_in_place, gamma_in_place, hue_turns, saturation_in_place
from workbench.runtime.kornia_modules.fusion import fusion_grid

# Fused vs step by step, in levels of 255, on 200x200 cuts of the sample photos: a chain that
# resamples two or three times (RandomResizedCrop, Rotate) measured 0.94-1.06 mean, 0.45-0.56
# away from the 20-pixel border (the step-by-step run interpolates more: it is blurrier).
FUSED_MAE = 1.5
FUSED_INTERIOR_MAE = 0.8
# Where only one step resamples (the others exact or identities) the maps are the same.
ONE_RESAMPLING_MAX = 1e-4  # float32 rounding of other arithmetic (0.03/255)


@pytest.fixture(scope="module")
def cuts(sample_images):
    return [np.ascontiguousarray(i[:200, :200]) for i in sample_images[:4]]


def module_of(chain):
    return load_module(emit(chain, "kornia"), "kornia")


def both_ways(chain, images):
    """(fused images, unfused images, fused records, unfused records) of the exported module."""
    module = module_of(chain)
    fused, fused_records = module.augment_images(images, seed=chain.seed)
    plain, plain_records = module.augment_images(images, seed=chain.seed, fuse=False)
    return fused, plain, fused_records, plain_records


def assert_same_records(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for key in x:
            np.testing.assert_array_equal(x[key], y[key], err_msg=key)


def test_runs_are_cut_where_steps_cannot_fuse():
    chain = (wb.Chain(seed=1).add("RandomResizedCrop", size=[64, 64]).add("HorizontalFlip").add("Rotate")
             .add("ColorJitter").add("Normalize").add("GaussianBlur").add("Invert")
             .add("Resize", size=[32, 32]).add("Rotate", interpolation="nearest"))
    module = module_of(chain)
    segments = module.fusion_segments(module.build_augmentation())
    kinds = [(kind, [type(m).__name__ for m in modules]) for kind, modules in segments]
    assert kinds == [("geometry", ["RandomResizedCrop", "RandomHorizontalFlip", "RandomRotation"]),
                     ("colour", ["ColorJitter", "Normalize"]), (None, ["WbGaussianBlur"]),
                     ("colour", ["RandomInvert"]),
                     # An antialiased shrink filters first: it runs alone; a nearest rotation alone fuses nothing.
                     (None, ["WbResize"]), (None, ["RandomRotation"])]
    assert fusion_bounds(module, module.build_augmentation()) == [3, 5, 6, 7, 8, 9]
    # Two resample modes do not share a resampling; exact steps (flips) join either.
    mixed = module_of(wb.Chain(seed=1).add("Rotate").add("VerticalFlip").add("Rotate", interpolation="nearest"))
    assert [len(m) for _, m in mixed.fusion_segments(mixed.build_augmentation())] == [2, 1]
    # One resize among exact steps: they stay exact, copies of its pixels; a warp takes them in.
    single = module_of(wb.Chain(seed=1).add("Resize", size=[32, 32]).add("RandomRotate90").add("Transpose")
                       .add("GaussianBlur").add("RandomResizedCrop", size=[24, 24]).add("HorizontalFlip"))
    assert [kind for kind, _ in single.fusion_segments(single.build_augmentation())] == [None] * 6
    warp = module_of(wb.Chain(seed=1).add("HorizontalFlip").add("Rotate"))
    assert [kind for kind, _ in warp.fusion_segments(warp.build_augmentation())] == ["geometry"]


FUSABLE = [("HorizontalFlip", {}), ("VerticalFlip", {}), ("Rotate", {}), ("Affine", {"shear": [-5.0, 5.0]}),
           ("RandomResizedCrop", {"size": [100, 90]}), ("Resize", {"size": [150, 170], "antialias": False}),
           ("CenterCrop", {"size": [150, 120]}), ("RandomCrop", {"size": [150, 120]}), ("Translate", {}),
           ("Shear", {}), ("Perspective", {}), ("RandomRotate90", {}), ("Transpose", {}), ("D4", {})]


@pytest.mark.parametrize("op,params", FUSABLE, ids=[op for op, _ in FUSABLE])
def test_every_fusable_step_maps_pixels_as_its_own_module(op, params, cuts):
    """Each fusable step fused with a rotation by 0 degrees (which resamples nothing away): the
    same pixels as the step on its own, and the same draws. (A first Normalize by 0 and 1 gives the run
    floats, unchanged: on uint8 levels OpenCV resamples instead, tests/test_kornia_levels.py.)"""
    chain = wb.Chain(seed=5).add("Normalize", mean=[0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0]) \
        .add(op, p=1.0, **params).add("Rotate", p=1.0, degrees=[0.0, 0.0])
    module = module_of(chain)
    assert [kind for kind, _ in module.fusion_segments(module.build_augmentation())] == ["colour", "geometry"]
    fused, plain, fused_records, plain_records = both_ways(chain, cuts)
    assert_same_records(fused_records, plain_records)
    assert fused.shape == plain.shape
    assert np.abs(fused - plain).max() <= ONE_RESAMPLING_MAX


@pytest.mark.parametrize("scale", [[0.08, 1.0], [0.5, 1.0]])
def test_fused_chain_matches_step_by_step_within_tolerance(scale, cuts):
    """The example chain (RandomResizedCrop, flip, rotate, brightness, normalize): the same
    draws and p gating, the images within FUSED_MAE; fused is one resampling, not three."""
    chain = (wb.Chain(seed=3).add("RandomResizedCrop", size=[128, 128], scale=scale).add("HorizontalFlip")
             .add("Rotate", degrees=[-20.0, 20.0]).add("Brightness", p=0.5))
    fused, plain, fused_records, plain_records = both_ways(chain, cuts)
    assert_same_records(fused_records, plain_records)
    diff = np.abs(fused - plain) * 255
    assert diff.mean() <= FUSED_MAE, diff.mean()
    assert diff[:, 20:-20, 20:-20].mean() <= FUSED_INTERIOR_MAE
    # Not the same computation: a fused run interpolates once (sharper), so some pixels differ.
    assert diff.max() > 0.01


def test_points_a_crop_cut_off_stay_black_after_a_rotation(cuts):
    """Crop, then rotate 45 degrees: the step-by-step run fills the rotated corners with 0 (they
    came from outside the crop); the fused run, which samples the uncropped image, must check the
    crop's frame and give 0 there too, not the photo around the crop."""
    chain = wb.Chain(seed=1).add("CenterCrop", size=[100, 100]).add("Rotate", p=1.0, degrees=[45.0, 45.0])
    fused, plain, _, _ = both_ways(chain, cuts)
    black = (plain == 0).all(-1)
    # Away from the diagonal edges (where one blends over half a pixel and the other cuts).
    corner = np.zeros_like(black)
    corner[:, :12, :12] = corner[:, :12, -12:] = corner[:, -12:, :12] = corner[:, -12:, -12:] = True
    assert black[corner].all()
    assert (fused[corner] == 0).all()
    assert np.abs(fused - plain).mean() * 255 <= FUSED_MAE


def test_colour_runs_give_the_step_by_step_values(cuts):
    """Pointwise colour steps, some gated by p: one pass over the batch, the same values. The
    single-factor ops are ColorJitters that draw their order; the full one has a fixed order. (A first
    Normalize by 0 and 1 makes the batch floats unchanged: ColorJitters that meet uint8 levels run on them,
    tests/test_kornia_levels.py.)"""
    chain = (wb.Chain(seed=1).add("Normalize", mean=[0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0]).add("ColorJitter", p=0.5)
             .add("Invert", p=0.5).add("Gamma").add("Solarize")
             .add("Posterize").add("BrightnessContrast").add("HueSaturationValue").add("RGBShift")
             .add("ChannelShuffle").add("Normalize").add("Brightness").add("Contrast", p=0.5)
             .add("Saturation").add("Hue").add("Normalize", mean=[0.5, 0.4, 0.3], std=[0.25, 0.5, 2.0]))
    module = module_of(chain)
    assert [len(m) for _, m in module.fusion_segments(module.build_augmentation())] == [16]
    fused, plain, fused_records, plain_records = both_ways(chain, cuts)
    assert_same_records(fused_records, plain_records)
    # The gates really left some samples alone.
    assert any(0 < record["batch_prob"].sum() < len(cuts) for record in fused_records[1:3])
    # (The fused run moves the hue by hue_turns, HSV's closed form, within 2e-6 of Kornia's adjust_hue that
    # the step-by-step ColorJitter runs; the last Normalize's 1 / 0.25 scales that up.)
    assert np.abs(fused - plain).max() <= 1e-5


def test_fused_runs_leave_the_callers_batch_alone(cuts):
    """Colour runs write in place only into buffers of their own: the float batch a caller (the
    app's preview cache) hands in is unchanged, on the whole batch and in chunks."""
    chain = wb.Chain(seed=1).add("Brightness").add("Normalize").add("Rotate").add("Affine").add("Brightness")
    module = module_of(chain)
    batch = torch.stack([torch.from_numpy(c).permute(2, 0, 1) for c in cuts]).float() / 255.0
    before = batch.clone()
    whole = module.apply_steps(module.build_augmentation(), batch)
    assert torch.equal(batch, before)
    assert not torch.equal(whole, before)
    module.fusion_chunk = lambda shape, device: 1
    module.apply_steps(module.build_augmentation(), batch)
    assert torch.equal(batch, before)


def test_export_runs_the_fused_code(tmp_path, cuts):
    """chain.run and the exported file are the same fused computation, bit for bit."""
    chain = (wb.Chain(seed=7).add("RandomResizedCrop", size=[96, 96]).add("HorizontalFlip").add("Rotate")
             .add("ColorJitter").add("Normalize"))
    run = chain.run(cuts)
    out, records = module_of(chain).augment_images(cuts, seed=7)
    np.testing.assert_array_equal(run.images, out)
    unfused, _ = module_of(chain).augment_images(cuts, seed=7, fuse=False)
    assert not np.array_equal(unfused, out)


@pytest.mark.parametrize("chunk", [1, 3, 7])
def test_chunks_of_samples_give_the_whole_batch_values(chunk, cuts, monkeypatch):
    """On a CPU fused runs go a few samples at a time (fusion_chunk); every chunk size, one that
    does not divide the batch too, gives the whole batch's values and draws bit for bit."""
    chain = (wb.Chain(seed=7).add("RandomResizedCrop", size=[96, 96]).add("HorizontalFlip").add("Rotate")
             .add("ColorJitter", p=0.5).add("Posterize").add("Normalize").add("GaussianBlur")
             .add("Perspective").add("Affine").add("Gamma").add("ChannelShuffle"))
    images = [np.roll(cut, shift, axis=1) for shift in (0, 40) for cut in cuts]  # 8 samples
    module = module_of(chain)
    assert [kind for kind, _ in module.fusion_segments(module.build_augmentation())] == \
        ["geometry", "colour", None, "geometry", "colour"]
    monkeypatch.setattr(module, "fusion_chunk", lambda shape, device: int(shape[0]))
    whole, whole_records = module.augment_images(images, seed=7)
    monkeypatch.setattr(module, "fusion_chunk", lambda shape, device: chunk)
    chunked, chunked_records = module.augment_images(images, seed=7)
    np.testing.assert_array_equal(chunked, whole)
    assert_same_records(chunked_records, whole_records)


def test_compile_is_kornia_only():
    chain = wb.Chain(seed=1).add("Rotate")
    with pytest.raises(ChainError, match="torch_compile=True .* backend='kornia'"):
        chain.run(wb.load_images()[:1], backend="dali", torch_compile=True)


def test_compile_falls_back_with_a_warning_where_torch_compile_fails(cuts, monkeypatch):
    """Where torch.compile cannot run (no compiler, an unsupported platform) the fused runs
    run eagerly, with one warning, and give the eager result. (A perspective: a CPU resamples it on floats,
    and the colour run after it too, where the compiled kernels run.)"""
    chain = wb.Chain(seed=2).add("Perspective").add("HorizontalFlip").add("Brightness").add("Normalize")
    module = module_of(chain)

    def broken_compile(function, **kwargs):
        def compiled(*args):
            raise RuntimeError("no C++ compiler found")
        return compiled

    monkeypatch.setattr(module.torch, "compile", broken_compile)
    monkeypatch.setitem(module.COMPILED_KERNELS, "functions", {})
    monkeypatch.setitem(module.COMPILED_KERNELS, "unavailable", False)
    eager, _ = module.augment_images(cuts, seed=2)
    with pytest.warns(RuntimeWarning, match="torch.compile is unavailable here .*no C\\+\\+ compiler"):
        fallback, _ = module.augment_images(cuts, seed=2, torch_compile=True)
    np.testing.assert_array_equal(fallback, eager)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # only once
        module.augment_images(cuts, seed=2, torch_compile=True)


def test_compiled_runs_give_the_eager_values_and_draws(cuts):
    """torch.compile (CPU inductor here) of the fused runs: the same draws, the eager values
    within float rounding (the compiler reorders arithmetic)."""
    small = [c[:64, :64] for c in cuts[:2]]
    chain = wb.Chain(seed=4).add("RandomResizedCrop", size=[48, 48]).add("Rotate").add("Brightness").add("Normalize")
    eager = chain.run(small)
    compiled = chain.run(small, torch_compile=True)
    assert repr(compiled.params) == repr(eager.params)
    np.testing.assert_allclose(compiled.images, eager.images, atol=1e-4)


def test_two_chains_compiled_in_one_process_each_run_compiled(cuts):
    """The workbench loads each chain's program as a module of its own, and identical blocks of two
    programs share their code objects, on which torch.compile keeps what it compiled: a second chain
    compiled in the same process ran the first's compiled code, whose helpers live in the first's
    globals (NameError), and every run after was eager."""
    small = [c[:64, :64] for c in cuts] * 2
    # Steps whose p leaves samples out (gated in the run), as ImageNet's ColorJitter p=0.8.
    chains = [wb.Chain(seed=4).add("ColorJitter", p=0.5).add("Normalize"),
              wb.Chain(seed=5).add("Brightness", p=0.5).add("Contrast", p=0.5).add("Normalize"),
              wb.Chain(seed=6).add("Rotate").add("Contrast", p=0.5).add("Normalize")]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="torch.compile is unavailable")
        for chain in chains:
            np.testing.assert_allclose(chain.run(small, torch_compile=True).images, chain.run(small).images,
                                       atol=1e-4)
    assert not any(module_of(chain).COMPILED_KERNELS["unavailable"] for chain in chains)


# The fused path against DALI and Albumentations, which resample step by step (in levels of 255,
# 4-pixel border left out, on 375x500 cuts of the sample photos): a run with two resampling warps
# (Rotate then Affine) measured 1.42 for both (step by step, Kornia is 0.21 from them: one
# interpolation less blurs less); a run that resamples once (a rotation, whole-pixel shifts and a
# flip) 0.19, as Rotate alone.
FUSED_PARITY = {"two warps": 1.6, "one warp": 0.4}
PARITY_CHAINS = {
    "two warps": [("CenterCrop", {"size": [300, 400]}), ("HorizontalFlip", {}), ("Rotate", {"degrees": [17.0, 17.0]}),
                  ("Affine", {"degrees": [10.0, 10.0], "scale": [0.9, 0.9], "translate": [0.0, 0.0]})],
    "one warp": [("Rotate", {"degrees": [-12.0, -12.0]}),
                 ("Translate", {"translate_x": [0.1, 0.1], "translate_y": [-0.08, -0.08]}), ("VerticalFlip", {})],
}


@pytest.mark.parametrize("name", list(PARITY_CHAINS))
def test_fused_runs_agree_with_the_other_backends(name, sample_images):
    photos = [np.ascontiguousarray(i[:375, :500]) for i in sample_images if i.shape[0] >= 375 and i.shape[1] >= 500]
    assert len(photos) >= 6
    chain = wb.Chain(seed=3)
    for op, params in PARITY_CHAINS[name]:
        chain.add(op, p=1.0, **params)
    module = module_of(chain)
    assert [kind for kind, _ in module.fusion_segments(module.build_augmentation())] == ["geometry"]
    fused = chain.run(photos).images
    for other in ("dali", "albumentations"):
        theirs = chain.run(photos, backend=other).images
        mae = np.mean([np.abs(a[4:-4, 4:-4] - np.asarray(b, np.float64)[4:-4, 4:-4] / 255.0).mean()
                       for a, b in zip(fused, theirs)]) * 255
        assert mae <= FUSED_PARITY[name], f"{name}, {other}: {mae:.2f}/255"


@pytest.mark.parametrize("affine", [True, False])
def test_the_fused_sampling_grid_compiles_whole_and_equals_the_eager_one(affine):
    # On an H100, torch.compile broke the fused run's graph at the grid's out= writes into strided views.
    theta = torch.tensor([[[1.1, 0.2, 0.05], [-0.1, 0.9, -0.02], [0.0, 0.0, 1.0]],
                          [[0.8, -0.3, 0.1], [0.25, 1.2, 0.0], [0.05, -0.02, 1.0]]])
    torch._dynamo.reset()
    assert torch._dynamo.explain(fusion_grid)(theta, (20, 24), affine).graph_break_count == 0
    traced = torch.compile(fusion_grid, backend="eager", fullgraph=True)(theta, (20, 24), affine)
    assert torch.equal(traced, fusion_grid(theta, (20, 24), affine))


def test_hue_turns_is_kornias_adjust_hue():
    """The fused runs' hue (HSV's closed form) gives Kornia's adjust_hue: every sextant, grey pixels, ties
    between channels, turns both ways and past a whole turn."""
    torch.manual_seed(0)
    x = torch.rand(6, 3, 40, 40)
    x[:, :, :5] = 0.5                     # grey: no hue
    x[:, 1, 5:10] = x[:, 0, 5:10]         # red and green tie
    x[:, 2, 10:15] = x[:, 1, 10:15]       # green and blue tie
    turns = torch.tensor([-0.5, -0.3, 0.0, 0.1, 0.5, 1.25])
    expected = kornia.enhance.adjust_hue(x, turns * 2 * math.pi)
    assert (hue_turns(x, turns) - expected).abs().max() <= 2e-6
    assert (hue_turns(x, turns) - x).abs().max() > 0.5  # (it moved the hue)


def test_steps_gated_by_p_transform_only_their_samples_with_kornias_values(cuts):
    """On the CPU a step whose p left samples out transforms only the others (apply_to_rows):
    the values and draws Kornia's own forward gives, whole-batch transform and torch.where blend."""
    # (A first Normalize by 0 and 1 makes floats of the levels, unchanged: Kornia's forward takes no uint8.)
    chain = (wb.Chain(seed=3).add("Normalize", mean=[0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0])
             .add("HorizontalFlip", p=0.5).add("GaussianBlur", p=0.5).add("Grayscale", p=0.5)
             .add("GaussianNoise", p=0.5).add("VerticalFlip", p=0.5).add("Equalize", p=0.5).add("Normalize"))
    images = cuts * 3
    module = module_of(chain)
    rows, records = module.augment_images(images, seed=chain.seed)
    assert all(0 < record["batch_prob"].sum() < len(images) for record in records[1:7])
    module.rows_to_apply = lambda *args: None  # Kornia's forward for every step
    whole, whole_records = module.augment_images(images, seed=chain.seed)
    assert_same_records(records, whole_records)
    assert np.array_equal(rows, whole)


def test_gated_steps_leave_the_callers_batch_alone(cuts):
    """A gated step writes into the batch in place only where the batch is the run's own: not into
    the caller's, nor into a crop that is a view of it."""
    module = module_of(wb.Chain(seed=1).add("HorizontalFlip", p=0.5).add("CenterCrop", size=[100, 100])
                       .add("Grayscale", p=0.5))
    batch = torch.stack([torch.from_numpy(c).permute(2, 0, 1) for c in cuts * 2]).float() / 255.0
    before = batch.clone()
    out = module.apply_steps(module.build_augmentation(), batch)
    assert torch.equal(batch, before)
    assert out.shape[-2:] == (100, 100)


@pytest.mark.parametrize("steps", [
    [("Resize", {"size": [96, 80]}), ("CenterCrop", {"size": [64, 60]}), ("Normalize", {})],
    [("RandomResizedCrop", {"size": [64, 64]}), ("HorizontalFlip", {"p": 0.5}), ("ColorJitter", {"p": 0.8}),
     ("Grayscale", {"p": 0.5}), ("GaussianBlur", {"p": 0.5, "kernel_size": [3, 9]}), ("Normalize", {})],
    [("RandomCrop", {"size": [90, 90]}), ("VerticalFlip", {"p": 0.5}), ("GaussianNoise", {"p": 0.5}),
     ("MotionBlur", {"p": 0.5}), ("MedianBlur", {"p": 0.5}), ("Blur", {"p": 0.5})],
    [("HorizontalFlip", {"p": 0.5}), ("Affine", {}), ("Brightness", {}), ("Resize", {"size": [120, 120]})],
], ids=["eval", "self_supervised", "filters", "detection"])
def test_stretches_of_steps_run_by_chunks_with_the_step_by_step_values(steps, cuts, monkeypatch):
    """On a CPU the steps between fused runs that treat each sample on its own join them, and the
    stretch runs a chunk of samples at a time (run_fused): the values and draws of the steps run one
    by one on the whole batch (fuse=False), bit for bit where no fused run changes the arithmetic.
    (The first resizes on uint8 levels, which fuse=False leaves to Kornia's floats, are off here: the
    test below is theirs.)"""
    chain = wb.Chain(seed=5)
    for op, params in steps:
        chain.add(op, **params)
    module = module_of(chain)
    segments = module.fusion_segments(module.build_augmentation())
    monkeypatch.setattr(module, "LEVEL_STEPS", ())
    monkeypatch.setattr(module, "fusion_chunk", lambda shape, device: 2)
    calls = []
    fused_plans = module.fused_plans
    monkeypatch.setattr(module, "fused_plans", lambda *args: calls.append(len(args[0])) or fused_plans(*args))
    images = cuts + cuts[:1]
    chunked, chunked_records = module.augment_images(images, seed=chain.seed)
    assert calls == [len(segments)]  # one stretch: the whole chain
    plain, plain_records = module.augment_images(images, seed=chain.seed, fuse=False)
    assert_same_records(chunked_records, plain_records)
    if all(kind is None or kind == "colour" and "ColorJitter" not in str(m) for kind, m in segments):
        assert np.array_equal(chunked, plain)
    else:
        assert np.abs(chunked - plain).max() <= 1e-5 if "Affine" not in str(steps) else \
            np.abs(chunked - plain).mean() <= FUSED_MAE / 255


@pytest.mark.parametrize("steps, rounds", [
    ([("Resize", {"size": [96, 80]}), ("CenterCrop", {"size": [64, 60]}), ("HorizontalFlip", {"p": 0.5})], True),
    ([("HorizontalFlip", {"p": 0.5}), ("RandomResizedCrop", {"size": [72, 64], "antialias": True}),
      ("VerticalFlip", {"p": 0.5})], True),
    ([("RandomResizedCrop", {"size": [72, 64], "interpolation": "nearest"}), ("RandomCrop", {"size": [60, 60]}),
      ("VerticalFlip", {"p": 0.5})], False),
    ([("CenterCrop", {"size": [120, 100]}), ("HorizontalFlip", {"p": 0.5}), ("Invert", {})], False),
], ids=["resize-crop-flip", "flip-filtered-crop", "nearest-crop", "crop-flip"])
def test_first_crops_flips_and_resizes_run_on_uint8_levels_within_one_level(steps, rounds, cuts):
    """On a CPU the chain's first crops, flips and bilinear or nearest resizes run on the images' uint8
    levels (LEVEL_STEPS), as OpenCV resizes: crops, flips and nearest copy levels (the float run,
    fuse=False); a bilinear resize keeps levels (within one of the floats, and it must
    differ); the draws are the same. The levels are the caller's: nothing writes into them."""
    chain = wb.Chain(seed=6)
    for op, params in steps:
        chain.add(op, **params)
    module = module_of(chain)
    augmentation = module.build_augmentation()
    assert levels_head(module, augmentation, "cpu") == len(steps)  # (an Invert looks its levels up: levels.py)
    images = cuts + cuts[:2]
    on_levels, records = module.augment_images(images, seed=chain.seed)
    on_floats, float_records = module.augment_images(images, seed=chain.seed, fuse=False)
    assert_same_records(records, float_records)
    difference = np.abs(on_levels - on_floats).max()
    if rounds:
        assert 0 < difference <= 1 / 255 + 1e-6, difference * 255
    else:  # (an Invert's looked-up level is 1 - v to float rounding)
        assert difference <= 1e-6
    batch = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2)
    before = batch.clone()
    torch.manual_seed(chain.seed)
    out = module.apply_steps(augmentation, batch)
    assert torch.equal(batch, before) and out.dtype == torch.float32


def test_colour_runs_adjust_contrast_and_saturation_in_place_with_kornias_values():
    """contrast_in_place and saturation_in_place, which a colour run uses on a batch of its own, give
    Kornia's adjust_contrast_with_mean_subtraction and adjust_saturation_with_gray_subtraction bit for bit."""
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(6, 3, 33, 47, generator=generator)
    factor = torch.rand(6, generator=generator) * 2.0
    for ours, theirs in ((contrast_in_place, kornia.enhance.adjust_contrast_with_mean_subtraction),
                         (saturation_in_place, kornia.enhance.adjust_saturation_with_gray_subtraction)):
        expected = theirs(x, factor)
        got = ours(x.clone(), factor)
        assert torch.equal(got, expected)
        assert not torch.equal(got, x)


def test_colour_runs_apply_gamma_in_place_with_kornias_values():
    """gamma_in_place, which a colour run uses on a batch of its own, gives K.RandomGamma's transform bit for bit."""
    generator = torch.Generator().manual_seed(1)
    x = torch.rand(5, 3, 21, 30, generator=generator) * 1.2 - 0.1  # (out of range too: both clamp first)
    module = K.RandomGamma(gamma=(0.5, 2.0), gain=(0.8, 1.2), p=1.0)
    drawn = module.forward_parameters(x.shape)
    expected = module.apply_transform(x, drawn, module.flags)
    got = gamma_in_place(x.clone(), drawn["gamma_factor"], drawn["gain_factor"])
    assert torch.equal(got, expected)
    assert not torch.equal(got, x.clamp(0.0, 1.0))
