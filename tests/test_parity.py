"""Cross-backend parity: with ranges collapsed and p = 1, every op gives the same image on
every backend that supports it, within the tolerance its spec states, on real photographs."""
import numpy as np
import pytest

import workbench as wb
from workbench.ops import REGISTRY

from conftest import boxes_for, change_statistics

BACKENDS = ("kornia", "dali", "albumentations")
# Every (op, backend, other backend) where both backends support the op on the CPU: each is compared
# with the first backend that supports it. (An op a backend runs on its GPU only, OpSpec.gpu_only, is
# compared there by its own CUDA test.)
# Batch mixing ops pair samples differently per library: tests/test_ops_batch.py checks them.
ON_CPU = {name: [b for b in spec.backends if spec.supports(b, "cpu")] for name, spec in REGISTRY.items()}
PAIRS = [(name, ON_CPU[name][0], other) for name, spec in REGISTRY.items() for other in ON_CPU[name][1:]
         if spec.family != "batch mixing"]
SHARED = [name for name, spec in REGISTRY.items() if {"kornia", "dali"} <= set(spec.backends)]

def as_unit(images) -> list[np.ndarray]:
    """Outputs of any backend, one array per image, in [0, 1] float units (DALI keeps 0-255
    until a Normalize)."""
    return [np.asarray(i).astype(np.float64) / (255.0 if np.asarray(i).dtype == np.uint8 else 1.0) for i in images]


def errors(a: list[np.ndarray], b: list[np.ndarray], border: int) -> tuple[float, float]:
    """Mean absolute error and PSNR over all pixels of all images, `border` pixels left out."""
    cut = (lambda x: x[border:-border, border:-border]) if border else (lambda x: x)
    diff = np.concatenate([np.ravel(cut(x) - cut(y)) for x, y in zip(a, b, strict=True)])
    mse = float(np.mean(diff ** 2))
    return float(np.mean(np.abs(diff))), (99.0 if mse == 0 else 10 * np.log10(1.0 / mse))


@pytest.fixture(scope="module")
def photos(sample_images):
    """Real photographs of the sample set; RandomResizedCrop and Erase get a same-size set."""
    return sample_images[:8]


# op -> its parity chain's run on its first backend (read only).
FIRST_RUNS: dict[str, wb.RunResult] = {}


@pytest.mark.parametrize("op,backend,other", PAIRS, ids=[f"{op}-{a}-{b}" for op, a, b in PAIRS])
def test_op_agrees_across_backends(op, backend, other, photos, small_images, square_images):
    spec = wb.get_op(op)
    images = small_images if op in ("RandomResizedCrop", "Erase") or spec.parity.same_size else photos
    images = square_images if spec.square_input else images
    chain = wb.Chain(seed=3).add(op, p=1.0, **dict(spec.parity.params))
    first = FIRST_RUNS.get(op)
    if first is None:  # an op on three backends is compared twice with the same first run
        first = FIRST_RUNS[op] = chain.run(images, backend=backend, device="cpu", **boxes_for(chain, images))
    second = chain.run(images, backend=other, device="cpu", **boxes_for(chain, images))
    a, b = as_unit(first.images), as_unit(second.images)
    if not spec.sizes_per_sample:  # (an op that draws each sample's size draws it per backend)
        assert [x.shape for x in a] == [x.shape for x in b]
    before = as_unit(images)
    if spec.parity.reference is not None:
        # Draws differ by design: each backend must match the reference at its own draws.
        for result in (first, second):
            expected = [np.asarray(spec.parity.reference(image, rows[0]), np.float64)
                        for image, rows in zip(images, result.params)]
            mae, psnr = errors(as_unit(result.images), expected, spec.parity.border)
            assert mae <= spec.parity.mae + 1e-9 and psnr >= spec.parity.psnr, \
                f"{op} on {result.backend}: {mae * 255:.2f}/255, {psnr:.1f} dB from the reference at its own draws"
    elif spec.parity.statistics:
        gap = np.abs(change_statistics(a, before) - change_statistics(b, before)).max()
        assert gap <= spec.parity.mae + 1e-9, f"{op}: mean/std of the change differ by {gap * 255:.2f}/255"
    else:
        mae, psnr = errors(a, b, spec.parity.border)
        assert mae <= spec.parity.mae + 1e-9, \
            f"{op} ({backend} vs {other}): mean abs error {mae * 255:.2f}/255 > {spec.parity.mae * 255:.2f}/255"
        assert psnr >= spec.parity.psnr, f"{op} ({backend} vs {other}): PSNR {psnr:.1f} dB < {spec.parity.psnr} dB"
    # The op really did something (a collapsed range that is the identity would prove nothing).
    changed = any(x.shape != y.shape or not np.allclose(x, y) for x, y in zip(a, before))
    assert changed, f"{op}: the parity case left the images unchanged, so it proves nothing"
    # Both report the same collapsed draws.
    for name, value in spec.parity.params.items():
        if isinstance(value, list) and len(value) == 2 and value[0] == value[1] and op != "RandomResizedCrop" \
                and op != "Erase":
            for rows in (first.params, second.params):
                for row in rows:
                    v = row[0].get(name, row[0].get("angle") if name == "degrees" else None)
                    v = v[0] if isinstance(v, list) else v  # Affine reports scale as [sx, sy]
                    assert v is None or v == pytest.approx(value[0], rel=1e-6), (name, v)


@pytest.fixture(scope="module")
def crops_500x375(sample_images):
    """Real photographs cut to 375 rows x 500 columns (the size of a typical held-out photo):
    every sample photo that large, from its top-left corner."""
    return [np.ascontiguousarray(i[:375, :500]) for i in sample_images if i.shape[0] >= 375 and i.shape[1] >= 500]


def agree_with_kornia(chain, images, tolerance, border=4) -> dict[str, float]:
    """Each other backend's mean abs error from Kornia (in levels of 255), asserted within
    `tolerance` (in [0, 1] units)."""
    k = as_unit(chain.run(images, backend="kornia").images)
    out = {}
    for other in ("dali", "albumentations"):
        mae, _ = errors(k, as_unit(chain.run(images, backend=other).images), border)
        out[other] = mae * 255
        assert mae <= tolerance + 1e-9, f"{chain.steps[0].describe()} ({other} vs kornia): {mae * 255:.2f}/255"
    return out


# 500x375 photos shrunk by factors 1.25 to 6.25 (the held-out misses 171x133 and 97x120 in both
# orientations), shrunk on one axis only, and enlarged.
RESIZES = [[133, 171], [120, 97], [171, 133], [97, 120], [300, 400], [187, 250], [60, 80], [375, 200], [400, 600]]


@pytest.mark.parametrize("size", RESIZES, ids=[f"{h}x{w}" for h, w in RESIZES])
def test_antialiased_resize_agrees_across_backends(size, crops_500x375):
    """One antialias filter everywhere (the triangle filter): each backend within the stated
    tolerance of Kornia at every shrink factor."""
    assert len(crops_500x375) >= 6
    spec = wb.get_op("Resize")
    chain = wb.Chain(seed=3).add("Resize", size=size, antialias=True)
    agree_with_kornia(chain, crops_500x375, spec.parity.mae, spec.parity.border)
    # The filter really acts when shrinking: the unfiltered resize is far off (aliasing), enlarging is untouched.
    plain = as_unit(wb.Chain(seed=3).add("Resize", size=size, antialias=False).run(crops_500x375).images)
    filtered = as_unit(chain.run(crops_500x375).images)
    gap = errors(plain, filtered, 4)[0] * 255
    assert (gap > 1.0) if size[0] < 375 or size[1] < 500 else (gap < 1e-3), gap


@pytest.mark.parametrize("op,max_size", [("LongestMaxSize", 171), ("LongestMaxSize", 97), ("SmallestMaxSize", 133),
                                         ("SmallestMaxSize", 300)])
def test_antialiased_max_size_resizes_agree_across_backends(op, max_size, photos):
    spec = wb.get_op(op)
    chain = wb.Chain(seed=3).add(op, max_size=max_size, antialias=True)
    agree_with_kornia(chain, photos, spec.parity.mae, spec.parity.border)


HUE_SHIFTS = [0.01, 0.03, 0.1, -0.2, 0.5]


@pytest.mark.parametrize("normalized", [False, True], ids=["uint8", "after-Normalize"])
@pytest.mark.parametrize("shift", HUE_SHIFTS)
def test_hue_shift_agrees_across_backends(shift, normalized, photos):
    """DALI's hue is the exact HSV rotation (fn.hue is not): within the stated tolerance of Kornia
    at small and large shifts, on 8-bit images and on floats after a Normalize."""
    chain = wb.Chain(seed=3)
    if normalized:
        chain = chain.add("Normalize", mean=[0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0])
    chain = chain.add("Hue", shift=[shift, shift])
    measured = agree_with_kornia(chain, photos, wb.get_op("Hue").parity.mae, border=0)
    # On 8-bit images DALI differs from Kornia's floats only by rounding to a level.
    assert measured["dali"] < (0.05 if not normalized else 1e-3), measured


def test_hue_shift_under_dali_conditionals_matches_kornia(photos):
    """With p < 1 the shift runs under DALI's `if`: applied samples are Kornia's shift, the others untouched."""
    shifted = as_unit(wb.Chain(seed=3).add("Hue", shift=[0.1, 0.1]).run(photos, backend="kornia").images)
    result = wb.Chain(seed=5).add("Hue", p=0.5, shift=[0.1, 0.1]).run(photos, backend="dali")
    applied = [rows[0]["applied"] for rows in result.params]
    assert any(applied) and not all(applied)
    for out, image, expected, on in zip(as_unit(result.images), as_unit(photos), shifted, applied, strict=True):
        assert np.abs(out - (expected if on else image)).mean() < 0.1 / 255  # rounding to a level


def test_color_jitter_hue_on_dali_is_the_hsv_shift(photos):
    """ColorJitter's DALI hue step is the same exact shift (rounded to a level after each factor)."""
    spec = wb.get_op("ColorJitter")
    chain = wb.Chain(seed=3).add("ColorJitter", **{**spec.parity.params, "hue": [0.1, 0.1]})
    k = as_unit(chain.run(photos, backend="kornia").images)
    mae, _ = errors(k, as_unit(chain.run(photos, backend="dali").images), 0)
    assert mae <= 0.5 / 255, mae * 255


def test_unsupported_op_is_refused_with_the_backends_that_can(monkeypatch):
    """Every op runs on both backends today; an op without a DALI lowering must be refused."""
    import dataclasses

    kornia_only = dataclasses.replace(wb.get_op("Rotate"), name="KorniaOnlyRotate", dali=None)
    monkeypatch.setitem(REGISTRY, "KorniaOnlyRotate", kornia_only)
    chain = wb.Chain().add("KorniaOnlyRotate")
    with pytest.raises(wb.UnsupportedOpError, match=r"cannot export to dali: KorniaOnlyRotate runs on kornia"):
        chain.export("dali")
    with pytest.raises(wb.UnsupportedOpError, match=r"KorniaOnlyRotate cannot run on dali: it runs on kornia"):
        chain.run([np.zeros((8, 8, 3), np.uint8)], backend="dali")
    assert chain.to_dict()["steps"][0]["op"] == "KorniaOnlyRotate"
    assert chain.run([np.zeros((8, 8, 3), np.uint8)], backend="kornia").images.shape == (1, 8, 8, 3)


def test_every_op_runs_on_two_backends_and_says_why_not_on_the_others():
    for name, spec in REGISTRY.items():
        assert len(spec.backends) >= 2, name
        missing = [b for b in BACKENDS if not spec.supports(b)]
        assert sorted(spec.unsupported) == sorted(missing), f"{name}: give a reason for each of {missing}"
