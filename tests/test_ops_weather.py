"""Weather ops (RandomRain, RandomFog, RandomSunFlare, RandomShadow, RandomSnow): the effect shows
where it should, ranges and p are honoured, DALI renders what it reports, and Albumentations'
transforms (defaults too) import 1:1."""
import os

import numpy as np
import pytest

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
import albumentations as A  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.ops.weather import _hash_drops, _rain_reference, _shadow_reference  # noqa: E402


def _grey(h=96, w=128, level=100):
    return np.full((h, w, 3), level, np.uint8)


def test_defaults_import_from_albumentations():
    chain = wb.Chain.from_albumentations([A.RandomRain(), A.RandomFog(), A.RandomSunFlare(), A.RandomShadow(),
                                          A.RandomSnow()])
    assert [s.op for s in chain.steps] == ["RandomRain", "RandomFog", "RandomSunFlare", "RandomShadow", "RandomSnow"]
    assert not chain.unmapped and [s.p for s in chain.steps] == [0.5] * 5
    for step in chain.steps:  # Albumentations' defaults are the ops' defaults
        assert step.params == step.spec.defaults(), step.op
    rain = chain.steps[0].params
    assert rain["drop_length"] == 0 and rain["drop_color"] == [200.0, 200.0, 200.0] and rain["slant_range"] == [-10, 10]


def test_settings_import_and_near_misses_name_the_parameter():
    chain = wb.Chain.from_albumentations([
        A.RandomRain(slant_range=(-5, 3), drop_length=12, drop_color=(180, 190, 200), rain_type="heavy", p=1.0),
        A.RandomShadow(shadow_roi=(0.1, 0.2, 0.9, 0.8), num_shadows_limit=(2, 3), shadow_dimension=6, p=0.3)])
    rain, shadow = (s.params for s in chain.steps)
    assert rain["slant_range"] == [-5.0, 3.0] and rain["drop_length"] == 12 and rain["rain_type"] == "heavy"
    assert shadow["shadow_roi"] == [0.1, 0.2, 0.9, 0.8] and shadow["num_shadows_limit"] == [2.0, 3.0]
    with pytest.warns(UserWarning):
        missed = wb.Chain.from_albumentations([A.RandomRain(drop_width=2), A.RandomSunFlare(method="physics_based"),
                                               A.RandomSnow(method="texture")])
    assert missed.steps == [] and "drop_width" in missed.unmapped[0].reason
    assert "method" in missed.unmapped[1].reason and "method='texture'" in missed.unmapped[2].reason
    snow = wb.Chain.from_albumentations([A.RandomSnow(snow_point_range=(0.2, 0.4), brightness_coeff=1.5, p=1.0)])
    assert snow.steps[0].params == {"snow_point_range": [0.2, 0.4], "brightness_coeff": 1.5}


def test_shadow_darkens_only_inside_its_polygons():
    image = _grey(level=200)
    chain = wb.Chain(seed=1).add("RandomShadow", p=1.0, shadow_roi=[0.0, 0.5, 1.0, 1.0], num_shadows_limit=[1, 1],
                                 shadow_intensity_range=[0.4, 0.4])
    res = chain.run([image], backend="kornia")
    out, row = res.images[0], res.params[0][0]
    vertices = np.asarray(row["vertices"]).reshape(-1, 5, 2)[:1]
    assert (vertices[..., 1] >= 48).all() and (vertices[..., 1] < 96).all()  # inside the ROI's lower half
    inside = _shadow_reference(np.ones_like(image) * 255, row, 5)[..., 0] < 1.0
    assert inside.any() and np.allclose(out[inside], 0.6 * 200 / 255, atol=1e-5)
    assert np.allclose(out[~inside], 200 / 255, atol=1e-6) and not inside[:48].any()


def test_fog_brightens_and_flattens():
    rng = np.random.default_rng(0)
    image = rng.integers(40, 160, (96, 128, 3)).astype(np.uint8)
    for backend in ("kornia", "albumentations", "dali"):
        out = np.asarray(wb.Chain(seed=2).add("RandomFog", p=1.0, fog_coef_range=[0.8, 0.8]).run(
            [image], backend=backend).images[0])
        out = out.astype(np.float64) / (255.0 if out.dtype == np.uint8 else 1.0)
        assert out.mean() > image.mean() / 255 + 0.05, backend  # brighter
        assert out.std() < image.std() / 255 * 0.8, backend  # less contrast
        centre, corner = out[36:60, 48:80].mean(), out[:12, :12].mean()
        assert centre > corner, backend  # densest at the centre


def test_dali_fog_matches_kornias_in_distribution_and_never_darkens():
    """DALI places no discs (see _dali_fog): over a batch of grey images its change has Kornia's
    mean and spread (measured 7.91 / 8.06 vs 7.89 / 7.76 levels on 32 images), is densest at the
    centre, never darkens, and each sample draws its own intensity from the range."""
    images = [_grey(level=120)] * 16
    out = {}
    for backend in ("kornia", "dali"):
        res = wb.Chain(seed=5).add("RandomFog", p=1.0, fog_coef_range=[0.6, 0.6]).run(images, backend=backend)
        out[backend] = np.stack([_unit(i) for i in res.images]) * 255.0 - 120.0
        assert all(rows[0]["intensity"] == pytest.approx(0.6) for rows in res.params)
    k, d = out["kornia"], out["dali"]
    assert abs(d.mean() - k.mean()) < 1.0 and abs(d.std() - k.std()) < 1.0
    assert d.min() >= 0.0 and d.max() <= 135.0
    centre, corner = d[:, 40:56, 56:72].mean(), d[:, :10, :10].mean()
    assert centre > 4 * corner and centre > 10.0
    drawn = wb.Chain(seed=6).add("RandomFog", p=1.0, fog_coef_range=[0.3, 0.9]).run(images[:4], backend="dali")
    intensity = [rows[0]["intensity"] for rows in drawn.params]
    assert all(0.3 <= v <= 0.9 for v in intensity) and len(set(intensity)) == 4


def test_rain_adds_streaks_of_the_drop_colour_and_darkens():
    image = _grey(level=0)
    chain = wb.Chain(seed=4).add("RandomRain", p=1.0, slant_range=[0, 0], drop_color=[0, 0, 255], blur_value=1,
                                 brightness_coefficient=1.0, rain_type="heavy", drop_length=10)
    res = chain.run([image], backend="kornia")
    out = res.images[0]
    assert np.all(out[..., :2] == 0) and set(np.unique(out[..., 2])) == {0.0, 1.0}
    # Vertical streaks (slant 0): a lit pixel's column is lit for the whole streak length.
    lit = out[..., 2] > 0
    assert 96 * 5 <= lit.sum() <= 96 * 11
    y, x = np.argwhere(lit)[0]
    assert lit[y:y + 11, x].all()
    darker = wb.Chain(seed=4).add("RandomRain", p=1.0, brightness_coefficient=0.5, blur_value=3).run(
        [_grey(level=200)], backend="kornia").images[0]
    assert darker.max() <= 0.5 + 1e-6 and darker.min() == pytest.approx(100 / 255, abs=1e-5)


def test_rain_slant_is_drawn_from_its_range_per_sample():
    images = [_grey()] * 6
    res = wb.Chain(seed=5).add("RandomRain", p=1.0, slant_range=[-3, 7]).run(images, backend="kornia")
    slants = [rows[0]["slant"] for rows in res.params]
    assert all(-3 <= s <= 7 for s in slants) and len(set(slants)) == 6


def test_sun_flare_brightens_around_its_reported_centre():
    image = _grey(level=60)
    chain = wb.Chain(seed=6).add("RandomSunFlare", p=1.0, flare_roi=[0.25, 0.25, 0.75, 0.5], src_radius=40,
                                 num_flare_circles_range=[3, 3])
    res = chain.run([image], backend="kornia")
    out, row = res.images[0], res.params[0][0]
    x, y = int(row["flare_x"]), int(row["flare_y"])
    assert 32 <= x < 96 and 24 <= y < 48 and row["num_circles"] == 3
    assert out[y, x].mean() > 0.45 and out[y, x].mean() > out.mean() + 0.1
    assert all(0.05 <= a <= 0.2 for a in row["circle_alpha"][:3])


@pytest.mark.parametrize("op", ["RandomRain", "RandomFog", "RandomSunFlare", "RandomShadow", "RandomSnow"])
def test_p_gates_each_sample(op):
    level = 60 if op == "RandomSnow" else 120  # snow lifts only pixels below its lightness threshold
    images = [_grey(level=level)] * 8
    res = wb.Chain(seed=8).add(op, p=0.5).run(images, backend="kornia")
    applied = [rows[0]["applied"] for rows in res.params]
    assert 0 < sum(applied) < 8
    for out, on in zip(res.images, applied):
        assert np.allclose(out, level / 255, atol=1e-6) != on


def _unit(image):
    image = np.asarray(image, np.float64)
    return image / 255.0 if image.max() > 1.0 else image


def test_dali_rain_draws_exactly_the_streaks_of_its_hashed_drops_on_mixed_sizes():
    """Black images of two sizes, no blur: the lit pixels are the streaks of the drops that
    `_hash_drops` lists for the reported drop_hash, pixel for pixel (any slant, as Kornia rasters)."""
    images = [np.zeros((97, 131, 3), np.uint8), np.zeros((64, 50, 3), np.uint8)]
    params = dict(slant_range=[-13.5, 9.3], drop_color=[255, 255, 255], blur_value=1, brightness_coefficient=1.0,
                  rain_type="default", drop_length=0)
    res = wb.Chain(seed=11).add("RandomRain", p=1.0, **params).run(images, backend="dali")
    full = wb.get_op("RandomRain").validate_params("test", params)
    for image, out, rows in zip(images, res.images, res.params):
        row = rows[0]
        assert -13.5 <= row["slant"] <= 9.3
        drops = _hash_drops(row["drop_hash"], *image.shape[:2], "default", 0)
        assert len(drops) == image.shape[0] // 3 and (drops[:, 0] < image.shape[1]).all()
        assert (drops[:, 1] < image.shape[0] - image.shape[0] // 8).all()
        np.testing.assert_array_equal(_unit(out), _rain_reference(image, row, full))


def test_dali_shadow_darkens_only_inside_its_reported_polygons():
    image = _grey(level=200)
    chain = wb.Chain(seed=1).add("RandomShadow", p=1.0, shadow_roi=[0.0, 0.5, 1.0, 1.0], num_shadows_limit=[1, 3],
                                 shadow_intensity_range=[0.5, 0.5])
    res = chain.run([image] * 4, backend="dali")
    counts = set()
    for out, rows in zip(res.images, res.params):
        row = rows[0]
        vertices = np.asarray(row["vertices"]).reshape(3, 5, 2)  # the largest count, always
        counts.add(int(row["num_shadows"]))
        assert (vertices[..., 1] >= 48).all() and (vertices[..., 1] < 96).all()
        expected = _shadow_reference(image, row, 5)
        assert np.abs(_unit(out) - expected).max() <= 0.5 / 255 + 1e-9  # one rounding to a level
        assert not (_unit(out)[:48] < 200 / 255).any()
    assert counts <= {1, 2, 3} and len(counts) > 1


def test_dali_sun_flare_matches_its_reference_and_unused_circles_have_no_alpha():
    from workbench.ops.weather import _FLARE_CASE, _flare_reference

    images = [_grey(level=60), _grey(h=80, w=100, level=90)]
    params = {**_FLARE_CASE, "num_flare_circles_range": [2.0, 5.0]}
    res = wb.Chain(seed=6).add("RandomSunFlare", p=1.0, **params).run(images, backend="dali")
    full = wb.get_op("RandomSunFlare").validate_params("test", params)
    for image, out, rows in zip(images, res.images, res.params):
        row = rows[0]
        count = int(row["num_circles"])
        alpha = np.asarray(row["circle_alpha"])
        assert len(alpha) == 5 and (alpha[count:] == 0).all() and (0.05 <= alpha[:count]).all()
        assert np.abs(_unit(out) - _flare_reference(image, row, full)).max() <= 0.6 / 255
        x, y = int(row["flare_x"]), int(row["flare_y"])
        assert _unit(out)[y, x].mean() > _unit(image).mean() + 0.3  # the sun


def test_snow_bleaches_dark_pixels_only_and_keeps_their_hue():
    image = np.zeros((8, 8, 3), np.uint8)
    image[:4] = (40, 80, 120)   # lightness 80 < threshold: lifted by 2 to 160
    image[4:] = (200, 220, 240)  # lightness 220 above the threshold: kept
    chain = wb.Chain(seed=2).add("RandomSnow", p=1.0, snow_point_range=[0.3, 0.3], brightness_coeff=2.0)
    outs = {b: _unit(chain.run([image], backend=b).images[0]) * 255 for b in ("kornia", "dali", "albumentations")}
    for backend, out in outs.items():
        assert np.allclose(out[4:], (200, 220, 240), atol=1.01), backend
        top, bottom = out[0, 0].max(), out[0, 0].min()
        assert (top + bottom) / 2 == pytest.approx(160, abs=1.01), backend
        # Same hue and HLS saturation: the channels keep their order and relative spacing.
        assert np.allclose((out[0, 0] - bottom) / (top - bottom), (0.0, 0.5, 1.0), atol=0.02), backend
    assert np.abs(outs["kornia"] - outs["dali"]).max() <= 0.5 + 1e-4
    rows = chain.run([image] * 3, backend="dali").params
    assert all(r[0]["snow_point"] == pytest.approx(0.3) for r in rows)
