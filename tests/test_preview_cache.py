"""The app's prefix cache gives chain.run's results bit for bit, over sequences of edits."""
import numpy as np
import pytest

import workbench as wb
from workbench.backends.dali_cache import DaliPrefixCache
from workbench.backends.kornia_cache import PrefixCache

CACHES = {"kornia": PrefixCache, "dali": DaliPrefixCache}

from conftest import random_step_dict


def edits(seed: int):
    """A chain and a sequence of (edited step index, edit) pairs."""
    rng = np.random.default_rng(seed)
    ops = ["Rotate", "Brightness", "HorizontalFlip", "GaussianBlur", "Contrast", "Erase", "Normalize"]
    steps = [{"op": "RandomResizedCrop", "params": {"size": [64, 80], "scale": [0.4, 1.0]}}]
    steps += [random_step_dict(op, rng) for op in ops]
    for s in steps:
        s["enabled"] = True
    return wb.Chain.from_dict({"seed": seed, "steps": steps}), rng


@pytest.mark.parametrize("backend", ["kornia", "dali"])
@pytest.mark.parametrize("mixed", [False, True], ids=["same-size", "mixed-size"])
def test_cached_previews_equal_chain_run_over_edits(backend, mixed, small_images, sample_images):
    images = sample_images[:4] if mixed else small_images[:4]
    chain, rng = edits(11 if mixed else 5)
    cache = CACHES[backend]()
    starts = []
    for round_ in range(10):
        k = int(rng.integers(1, len(chain.steps)))
        step = chain.steps[k]
        before = step.to_dict()
        param = step.spec.params[0] if step.spec.params else None
        if param is not None and round_ % 3:
            step.params[param.name] = param.random(rng)
        elif not step.spec.always_applies:
            step.p = round(float(rng.uniform(0, 1)), 2)
        for draw in range(2):
            got = cache.run(chain, images, seed=chain.seed + draw)
            expected = chain.run(images, backend=backend, seed=chain.seed + draw)
            assert np.array_equal(got.images, expected.images), (round_, k, draw)
            assert got.params == expected.params
            if step.to_dict() != before:  # a real edit (some draws leave the step as it was)
                starts.append((k, cache.resumed_at))
    # Edits at step k resume from the state before k (not from the start) once warm.
    assert any(resumed == k for k, resumed in starts[2:])
    assert all(resumed <= k for k, resumed in starts), [s for s in starts if s[1] > s[0]]


def test_kornia_cache_never_resumes_inside_the_steps_run_on_levels(small_images):
    """On a CPU the chain's first crops, flips and resizes run on the uint8 levels (LEVEL_STEPS), and
    so does a colour run's ColorJitter after them (Brightness here): a state kept between two of them
    would be floats, which the step after it rounds otherwise. Editing the second resize, or the
    Brightness, recomputes from the images, and gives chain.run's pixels; a step after the levels
    resumes there."""
    chain = (wb.Chain(seed=4).add("Resize", size=[120, 130]).add("HorizontalFlip", p=0.5)
             .add("RandomResizedCrop", size=[64, 72], scale=[0.3, 1.0]).add("Brightness").add("Rotate"))
    cache = PrefixCache()
    for scale in ([0.3, 1.0], [0.5, 0.9], [0.2, 0.6]):
        chain.steps[2].params["scale"] = scale
        got = cache.run(chain, small_images[:4])
        assert np.array_equal(got.images, chain.run(small_images[:4], backend="kornia").images), scale
        assert cache.resumed_at in (0, 4), cache.resumed_at  # the images, or after the levels' last step
    chain.steps[3].params["factor"] = [1.1, 1.2]
    got = cache.run(chain, small_images[:4])
    assert cache.resumed_at == 0 and np.array_equal(got.images, chain.run(small_images[:4], backend="kornia").images)
    chain.steps[4].params["degrees"] = [-5, 5]
    got = cache.run(chain, small_images[:4])
    assert cache.resumed_at == 4 and np.array_equal(got.images, chain.run(small_images[:4], backend="kornia").images)


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_other_images_or_disabled_steps_invalidate(backend, small_images):
    chain, _ = edits(3)
    cache = CACHES[backend]()
    run = lambda imgs: chain.run(imgs, backend=backend).images  # noqa: E731
    cache.run(chain, small_images[:2])
    assert np.array_equal(cache.run(chain, small_images[2:4]).images, run(small_images[2:4]))
    assert cache.resumed_at == 0
    chain.steps[3].enabled = False
    assert np.array_equal(cache.run(chain, small_images[2:4]).images, run(small_images[2:4]))


def test_dali_cache_follows_flip_fusion(small_images):
    """Replacing the op after a flip can turn the flip's fusion into Normalize on or off;
    states cached before must not be reused across that change."""
    chain = wb.Chain(seed=2).add("HorizontalFlip", p=0.5).add("Brightness").add("Normalize")
    cache = DaliPrefixCache()
    for op in ("Rotate", "Contrast", "Rotate"):
        chain.steps[1] = wb.Step.create(op)
        assert np.array_equal(cache.run(chain, small_images[:3]).images,
                              chain.run(small_images[:3], backend="dali").images)


def test_kornia_preview_uploads_its_inputs_once_per_list_of_images(small_images):
    # An edit of the first step recomputes everything, but from the tensors already on the device.
    cache, chain = PrefixCache(), wb.Chain(seed=3).add("Brightness", factor=[0.9, 1.1]).add("HorizontalFlip")
    first = cache.run(chain, small_images[:3])
    uploaded = cache._inputs["tensors"]
    chain.steps[0].params["factor"] = [1.2, 1.3]
    second = cache.run(chain, small_images[:3])
    assert cache.resumed_at == 0 and cache._inputs["tensors"] is uploaded
    assert np.array_equal(second.images, chain.run(small_images[:3]).images)
    assert not np.array_equal(first.images, second.images)
    cache.run(chain, small_images[3:5])  # other images: uploaded anew
    assert cache._inputs["tensors"] is not uploaded and len(cache._inputs["tensors"]) == 2
