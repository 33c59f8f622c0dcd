"""Weather ops (RandomRain, RandomFog, RandomSunFlare, RandomShadow): the effect shows where it
should, ranges and p are honoured, and Albumentations' transforms (defaults too) import 1:1."""
import os

import numpy as np
import pytest

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
import albumentations as A  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.ops.weather import _shadow_reference  # noqa: E402


def _grey(h=96, w=128, level=100):
    return np.full((h, w, 3), level, np.uint8)


def test_defaults_import_from_albumentations():
    chain = wb.Chain.from_albumentations([A.RandomRain(), A.RandomFog(), A.RandomSunFlare(), A.RandomShadow()])
    assert [s.op for s in chain.steps] == ["RandomRain", "RandomFog", "RandomSunFlare", "RandomShadow"]
    assert not chain.unmapped and [s.p for s in chain.steps] == [0.5] * 4
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
        missed = wb.Chain.from_albumentations([A.RandomRain(drop_width=2), A.RandomSunFlare(method="physics_based")])
    assert missed.steps == [] and "drop_width" in missed.unmapped[0].reason
    assert "method" in missed.unmapped[1].reason


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
    for backend in ("kornia", "albumentations"):
        out = np.asarray(wb.Chain(seed=2).add("RandomFog", p=1.0, fog_coef_range=[0.8, 0.8]).run(
            [image], backend=backend).images[0], np.float64)
        out = out / (255.0 if backend == "albumentations" else 1.0)
        assert out.mean() > image.mean() / 255 + 0.05, backend  # brighter
        assert out.std() < image.std() / 255 * 0.8, backend  # less contrast
        centre, corner = out[36:60, 48:80].mean(), out[:12, :12].mean()
        assert centre > corner, backend  # densest at the centre


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


@pytest.mark.parametrize("op", ["RandomRain", "RandomFog", "RandomSunFlare", "RandomShadow"])
def test_p_gates_each_sample(op):
    images = [_grey(level=120)] * 8
    res = wb.Chain(seed=8).add(op, p=0.5).run(images, backend="kornia")
    applied = [rows[0]["applied"] for rows in res.params]
    assert 0 < sum(applied) < 8
    for out, on in zip(res.images, applied):
        assert np.allclose(out, 120 / 255, atol=1e-6) != on
