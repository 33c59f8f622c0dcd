"""step_draws (workbench/runtime/kornia_modules/draws.py) gives a step's draws as its own forward_parameters does:
the same values, bit for bit, and the same random stream after, over shapes, scales and ratios that take every
branch (a candidate that fits, none that fits, inputs narrower and wider than the ratios, one pixel)."""
import kornia.augmentation as K
import numpy as np
import pytest
import torch

import workbench as wb
from workbench.codegen import emit, load_module
from workbench.runtime.kornia_modules.draws import fast_resized_crop, plainly_gated, resized_crop_draws, step_draws
from workbench.runtime.kornia_modules.geometric import WbRandomResizedCrop

SHAPES = [(1, 3, 1, 1), (3, 3, 5, 3), (8, 3, 256, 256), (16, 3, 375, 500), (5, 1, 10, 400), (7, 3, 400, 10),
          (64, 3, 97, 131)]
SETTINGS = [dict(scale=(0.08, 1.0), ratio=(0.75, 1.3333)), dict(scale=(0.5, 0.5), ratio=(1.0, 1.0)),
            dict(scale=(1.0, 1.0), ratio=(4 / 3, 4 / 3)), dict(scale=(0.9, 1.0), ratio=(0.05, 20.0)),
            dict(scale=(0.001, 0.01), ratio=(2.0, 3.0)), dict(scale=torch.tensor([0.3, 0.9]),
                                                               ratio=torch.tensor([0.5, 0.8]))]


def assert_same_draws(ours, kornias):
    assert list(ours) == list(kornias)
    for key in kornias:
        assert ours[key].dtype == kornias[key].dtype, key
        torch.testing.assert_close(ours[key], kornias[key], rtol=0, atol=0, msg=key)


@pytest.mark.parametrize("settings", SETTINGS, ids=range(len(SETTINGS)))
@pytest.mark.parametrize("module_type", [K.RandomResizedCrop, WbRandomResizedCrop])
def test_resized_crop_draws_are_kornias_bit_for_bit_and_leave_the_stream_as_it_does(settings, module_type):
    module = module_type((24, 32), **settings)
    assert fast_resized_crop(module)
    missed = 0
    for seed, shape in enumerate(SHAPES * 3):
        shape = torch.Size(shape)
        torch.manual_seed(seed)
        kornias, after = module.forward_parameters(shape), torch.rand(3)
        torch.manual_seed(seed)
        ours, ours_after = resized_crop_draws(module, shape), torch.rand(3)
        assert_same_draws(ours, kornias)
        torch.testing.assert_close(ours_after, after, rtol=0, atol=0)
        width = kornias["src"][:, 1, 0] - kornias["src"][:, 0, 0] + 1
        height = kornias["src"][:, 2, 1] - kornias["src"][:, 1, 1] + 1
        missed += int(((width * height) < 0.999 * float(torch.as_tensor(settings["scale"])[0]) * shape[-2] * shape[-1]
                       ).sum())
    if settings["ratio"] == (0.05, 20.0):
        return
    # Tiny and narrow images leave some samples with no candidate that fits: the fallback windows were compared.
    assert missed > 0


def test_step_draws_takes_the_fast_draws_only_where_they_are_kornias():
    shape = torch.Size((4, 3, 50, 60))
    crop = K.RandomResizedCrop((8, 8))
    same = K.RandomResizedCrop((8, 8), same_on_batch=True)
    sometimes = K.RandomResizedCrop((8, 8), p=0.5)
    assert fast_resized_crop(crop) and not fast_resized_crop(same) and not fast_resized_crop(sometimes)
    assert not fast_resized_crop(K.RandomHorizontalFlip())
    for module in (crop, same, sometimes, K.RandomHorizontalFlip(), K.ColorJitter(0.2, 0.3)):
        torch.manual_seed(5)
        kornias = module.forward_parameters(shape)
        torch.manual_seed(5)
        assert_same_draws(step_draws(module, shape), kornias)


@pytest.mark.parametrize("shape", [(1, 3, 1, 1), (3, 3, 5, 3), (8, 3, 256, 256), (2, 1, 375, 500), (4, 3, 7, 9)])
@pytest.mark.parametrize("size", [(1, 1), (2, 3), (3, 2), (5, 3), (224, 224), (7, 9)])
def test_center_crop_draws_are_kornias_bit_for_bit(shape, size):
    """CenterCrop's corners on odd and even sides both ways (Kornia truncates halves), the whole image, and its
    own error where the crop does not fit."""
    module = K.CenterCrop(size)
    torch.manual_seed(3)
    try:
        kornias = module.forward_parameters(torch.Size(shape))
    except AssertionError as error:
        with pytest.raises(AssertionError, match="Crop size must be smaller"):
            step_draws(module, shape)
        assert size[0] > shape[-2] or size[1] > shape[-1], error
        return
    after = torch.rand(2)
    torch.manual_seed(3)
    ours = step_draws(module, shape)
    assert_same_values(ours, kornias, f"{shape} {size}")
    torch.testing.assert_close(torch.rand(2), after, rtol=0, atol=0)


def test_a_chain_with_a_resized_crop_draws_and_runs_as_kornias_own_draws_would(sample_images):
    """The chain's run with the fast draws against the same module's run with Kornia's forward_parameters."""
    chain = wb.Chain(seed=9).add("RandomResizedCrop", size=[64, 80]).add("HorizontalFlip").add("Normalize")
    module = load_module(emit(chain, "kornia"), "kornia")
    images = [image[:300, :300] for image in sample_images[:6]]
    fast, fast_records = module.augment_images(images, seed=9)
    fast_draws, module.step_draws = module.step_draws, lambda step, shape: step.forward_parameters(torch.Size(shape))
    try:
        slow, slow_records = module.augment_images(images, seed=9)
    finally:
        module.step_draws = fast_draws
    np.testing.assert_array_equal(fast, slow)
    for a, b in zip(fast_records, slow_records, strict=True):
        for key in b:
            np.testing.assert_array_equal(np.asarray(a[key]), np.asarray(b[key]))


def test_motion_kernels_are_kornias_bit_for_bit():
    """WbMotionBlur's kernels (filters.motion_kernels, numpy) against kornia.filters.get_motion_kernel2d: angles on
    the ties (30, 120 degrees), past a turn and negative, directions at and beyond their ends, every odd size."""
    from kornia.filters import get_motion_kernel2d

    from workbench.runtime.kornia_modules.filters import motion_kernels
    generator = torch.Generator().manual_seed(0)
    # Every 7.5 degrees (ties at 30, 60, 120, ...) with each of five directions, then odd angles and random ones.
    grid = torch.arange(-360.0, 390.0, 7.5).repeat_interleave(5)
    ends = torch.tensor([-1.0, -0.5, 0.0, 1.0, 1.5]).repeat(len(grid) // 5)
    special = torch.tensor([215.0, 359.999, 1e-7, -2.0])
    for size in (3, 5, 7, 9, 11):
        angle = torch.cat([grid, special, torch.rand(200, generator=generator) * 720.0 - 360.0])
        odd = torch.tensor([-2.0, 0.3, 1.0, -0.7])
        direction = torch.cat([ends, odd, torch.rand(200, generator=generator) * 2 - 1])
        ours, kornias = motion_kernels(size, angle, direction), get_motion_kernel2d(size, angle, direction)
        assert ours.dtype == kornias.dtype == torch.float32
        torch.testing.assert_close(ours, kornias, rtol=0, atol=0)


def assert_same_values(ours, kornias, where):
    """Dicts (their keys in order), lists and tuples item by item, tensors bit for bit in their dtype."""
    assert type(ours) is type(kornias), where
    if isinstance(kornias, dict):
        assert list(ours) == list(kornias), where
        for key in kornias:
            assert_same_values(ours[key], kornias[key], f"{where} {key}")
    elif isinstance(kornias, (list, tuple)):
        assert len(ours) == len(kornias), where
        for k, (a, b) in enumerate(zip(ours, kornias)):
            assert_same_values(a, b, f"{where} [{k}]")
    elif torch.is_tensor(kornias):
        assert ours.dtype == kornias.dtype, where
        torch.testing.assert_close(ours, kornias, rtol=0, atol=0, equal_nan=True, msg=where)
    else:
        assert ours == kornias, where


def every_step_module():
    """Each op's Kornia module, built by the program as the chain of that op alone builds it (default settings),
    and a flip with p = 0.5 and 0 (a gate drawn per sample, a gate never drawn)."""
    modules = []
    for op in wb.list_ops(backend="kornia"):
        program = load_module(emit(wb.Chain().add(op), "kornia"), "kornia")
        modules.extend((op, module) for module in program.build_augmentation())
    return modules + [("p=0.5", K.RandomHorizontalFlip(p=0.5)), ("p=0", K.RandomVerticalFlip(p=0.0)),
                      ("one coin", K.RandomHorizontalFlip(p=0.5, same_on_batch=True)),
                      ("one jitter", K.ColorJitter(0.2, 0.3, 0.1, 0.05, p=0.7, same_on_batch=True))]


def test_every_steps_draws_are_its_own_forward_parameters_bit_for_bit():
    """step_draws against each module's forward_parameters, from the same seed, on a batch of 5: the same keys,
    dtypes and values, and the same random stream after; most steps take the fast paths (guard against a check
    that lets none through)."""
    shape = torch.Size((5, 3, 240, 256))  # (larger than the default crops)
    fast = 0
    for name, module in every_step_module():
        if not hasattr(module, "forward_parameters") or getattr(module, "reads_boxes", False):
            continue  # (a group; a step that needs the images' boxes)
        torch.manual_seed(11)
        kornias, after = module.forward_parameters(shape), torch.rand(2)
        torch.manual_seed(11)
        ours, ours_after = step_draws(module, shape), torch.rand(2)
        assert_same_values(ours, kornias, name)
        torch.testing.assert_close(ours_after, after, rtol=0, atol=0, msg=name)
        fast += fast_resized_crop(module) or plainly_gated(module)
    assert fast >= 40, fast
