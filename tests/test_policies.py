"""Augmentation policies (RandAugment, TrivialAugment, AutoAugment) as chain steps: the op set
parameter, what each backend reports per sample, that the report is what the image got, and
that Kornia and DALI mean the same policy."""
import os

import numpy as np
import pytest

import workbench as wb
from workbench.ops.params import OpRanges
from workbench.ops.policies import (AUTO_AUGMENT_POLICIES, POLICY_OPS, RAND_AUGMENT_OPS, apply_reported,
                                    auto_augment_bin)

from conftest import ROOT, run_script

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")
BACKENDS = ("kornia", "dali")
NO_EQUALIZE = {k: v for k, v in RAND_AUGMENT_OPS.items() if k != "equalize"}


def unit(images) -> list[np.ndarray]:
    return [np.asarray(i, np.float64) / (255.0 if np.asarray(i).dtype == np.uint8 else 1.0) for i in images]


# ---------------------------------------------------------------------------------------
# The op set parameter
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("ops, fragment", [
    ({"rotat": [-5, 5]}, r"parameter 'ops' names unknown op 'rotat' \(did you mean rotate\?\); known ops: rotate, "),
    ({"solarize": [0.8, 0.2]}, r"parameter 'ops' entry 'solarize' has lo > hi \(0.8 > 0.2\); write it as \[0.2, 0.8\]"),
    ({"posterize": [2, 9]}, r"parameter 'ops' entry 'posterize' must be a range \[lo, hi\] of numbers within \[0, 8\]"),
    ({"rotate": [0, 30]}, r"parameter 'ops' entry 'rotate' is applied with a random sign, so its range must be "
                          r"\[-a, a\], got \[0, 30\]; for example \[-30, 30\]"),
    ({"equalize": [0, 1]}, r"parameter 'ops' entry 'equalize' takes no magnitude: write \[\], got \[0, 1\]"),
    ({"brightness": "big"}, r"parameter 'ops' entry 'brightness' must be a range \[lo, hi\] of numbers "
                            r"within \[0, 2\]"),
    ({}, r"parameter 'ops' must map one or more op names to a \[lo, hi\] magnitude range"),
    ([["rotate", -5, 5]], r"parameter 'ops' must map one or more op names"),
])
@pytest.mark.parametrize("op", ["RandAugment", "TrivialAugment"])
def test_bad_op_sets_name_the_step_parameter_and_valid_values(op, ops, fragment):
    with pytest.raises(wb.ChainError, match=rf"step 1 \({op}\): " + fragment):
        wb.Chain.from_dict({"steps": [{"op": op, "params": {"ops": ops}}]})


def test_op_set_is_normalised_in_catalogue_order_and_round_trips(tmp_path):
    chain = wb.Chain(seed=5).add("RandAugment", n=1, magnitude=20,
                                 ops={"invert": None, "solarize": (0, 1), "rotate": [-10, 10], "equalize": []})
    ops = chain.steps[0].params["ops"]
    assert list(ops) == ["rotate", "solarize", "equalize", "invert"]  # the order every backend numbers them in
    assert ops == {"rotate": [-10.0, 10.0], "solarize": [0.0, 1.0], "equalize": [], "invert": []}
    for name in ("c.yaml", "c.json"):
        chain.save(tmp_path / name)
        assert wb.Chain.load(tmp_path / name) == chain
    assert wb.Chain.from_dict(chain.to_dict()).to_dict() == chain.to_dict()


def test_policies_apply_to_every_image_and_refuse_another_p():
    with pytest.raises(wb.ChainError, match=r"step 1 \(RandAugment\): RandAugment must apply to every sample "
                                            r"\(a policy's own draws decide .*\), so p must be 1.0, got 0.5"):
        wb.Chain.from_dict({"steps": [{"op": "RandAugment", "p": 0.5}]})
    call = wb.Chain().add("TrivialAugment").export("kornia").split("K.auto.TrivialAugment(")[1].split("\n")[0]
    assert "p=" not in call  # Kornia's policies take no p


def test_random_op_sets_are_valid_and_keep_every_op_known():
    param = wb.get_op("RandAugment").param("ops")
    assert isinstance(param, OpRanges) and [op.name for op in param.known] == [op.name for op in POLICY_OPS]
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(50):
        value = param.random(rng)
        assert param.validate("t", value) == value and value
        seen |= set(value)
    assert seen == {op.name for op in POLICY_OPS}


def test_autoaugment_tables_are_kornias():
    from kornia.augmentation.auto.autoaugment import autoaugment, ops

    for name in ("imagenet", "cifar10", "svhn"):
        kornia_policy = getattr(autoaugment, f"{name}_policy")
        assert [list(sub) for sub in AUTO_AUGMENT_POLICIES[name]] == [list(sub) for sub in kornia_policy]
    for op, factor in (("rotate", 1.0), ("shear_x", 180.0), ("translate_y", 1.0), ("solarize", 1.0),
                       ("posterize", 1.0), ("color", 1.0), ("brightness", 1.0)):
        for b in (0, 4, 9):
            lo, hi = getattr(ops, op)(1.0, b).magnitude_range
            assert auto_augment_bin(op, b) == pytest.approx((float(lo) * factor, float(hi) * factor), abs=1e-4)


# ---------------------------------------------------------------------------------------
# What the policies do, and what they report
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op, params", [("RandAugment", {"n": 1, "magnitude": 7, "ops": {"invert": []}}),
                                        ("TrivialAugment", {"ops": {"invert": []}})])
def test_an_invert_only_set_gives_255_minus_x_and_says_so(small_images, backend, op, params):
    res = wb.Chain(seed=2).add(op, **params).run(small_images, backend=backend)
    for image, out, rows in zip(small_images, unit(res.images), res.params):
        assert np.array_equal(np.round(out * 255).astype(np.uint8), 255 - image)
        assert rows[0]["ops"] == ["invert"] and rows[0]["magnitudes"] == [None] and rows[0]["applied"]
        assert not {"policy_choice", "op_applied", "op_magnitude"} & set(rows[0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_randaugment_magnitude_maps_each_range_as_kornia_does(small_images, backend):
    """m / 30 of each range: rotate [-30, 30] at m = 15 is 15 degrees with a random sign; posterize [4, 8] at
    m = 15 keeps 8 - 2 = 6 bits; translate_x [-0.25, 0.25] at 15 is 0.125 of the width, reported in pixels."""
    chain = wb.Chain(seed=4).add("RandAugment", n=3, magnitude=15,
                                 ops={"rotate": [-30, 30], "posterize": [4, 8], "translate_x": [-0.25, 0.25]})
    res = chain.run(small_images * 3, backend=backend)
    signs = set()
    for rows in res.params:
        row = rows[0]
        assert sorted(row["ops"]) == ["posterize", "rotate", "translate_x"]  # n different ops
        got = dict(zip(row["ops"], row["magnitudes"]))
        assert abs(got["rotate"]) == pytest.approx(15.0) and got["posterize"] == 6.0
        assert abs(got["translate_x"]) == pytest.approx(0.125 * 128)
        signs.add(np.sign(got["rotate"]))
    assert signs == {-1.0, 1.0}


@pytest.mark.parametrize("backend", BACKENDS)
def test_posterize_keeps_as_many_levels_as_its_bits(small_images, backend):
    res = wb.Chain(seed=1).add("TrivialAugment", ops={"posterize": [2.0, 2.0]}).run(small_images, backend=backend)
    for out, rows in zip(unit(res.images), res.params):
        assert rows[0]["magnitudes"] == [2.0]
        assert all(len(np.unique(np.round(out[..., c] * 255))) <= 4 for c in range(3))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op, params, tolerance", [
    ("RandAugment", {"n": 2, "magnitude": 12, "ops": NO_EQUALIZE}, 0.6),
    ("TrivialAugment", {}, 1.0),
])
def test_the_report_is_what_each_image_got(small_images, backend, op, params, tolerance):
    """Kornia's own ops at the reported draws give the image back: exactly on Kornia, and on DALI
    within its uint8 rounding between ops (and OpenCV's equalize, when drawn)."""
    images = small_images * 2
    for seed in (1, 2):
        res = wb.Chain(seed=seed).add(op, **params).run(images, backend=backend)
        for image, out, rows in zip(images, unit(res.images), res.params):
            expected = apply_reported(image, rows[0])
            error = np.abs(out - expected)[2:-2, 2:-2].mean() * 255
            limit = 1e-4 if backend == "kornia" else (4.0 if "equalize" in rows[0]["ops"] else tolerance)
            assert error <= limit, (rows[0], error)


def test_the_op_set_edit_is_honoured_and_its_ops_are_all_drawn(small_images):
    ops = {"solarize": [0.5, 0.5], "contrast": [1.5, 1.5], "invert": [], "rotate": [-20, 20]}
    dali = wb.Chain(seed=3).add("TrivialAugment", ops=ops).run(small_images * 6, backend="dali")
    drawn = [rows[0]["ops"][0] for rows in dali.params]
    assert set(drawn) == set(ops)  # DALI draws per sample: 36 samples cover the four ops
    kornia = set()
    for seed in range(12):  # Kornia draws one op per batch
        res = wb.Chain(seed=seed).add("TrivialAugment", ops=ops).run(small_images[:2], backend="kornia")
        assert res.params[0][0]["ops"] == res.params[1][0]["ops"]
        kornia.add(res.params[0][0]["ops"][0])
    assert kornia == set(ops)


def test_randaugment_draws_different_ops_and_caps_n_at_the_set(small_images):
    chain = wb.Chain(seed=8).add("RandAugment", n=4, magnitude=5, ops={"invert": [], "solarize": [0.0, 1.0]})
    for backend in BACKENDS:
        res = chain.run(small_images, backend=backend)
        assert all(sorted(rows[0]["ops"]) == ["invert", "solarize"] for rows in res.params)
    assert "n=2," in chain.export("kornia") and "policy_pick(" in chain.export("dali")


@pytest.mark.parametrize("policy", ["imagenet", "cifar10", "svhn"])
def test_autoaugment_runs_its_sub_policies_on_both_backends(small_images, policy):
    chain = wb.Chain(seed=6).add("AutoAugment", policy=policy)
    table = AUTO_AUGMENT_POLICIES[policy]
    images = small_images * 2
    for backend in BACKENDS:
        res = chain.run(images, backend=backend)
        for image, out, rows in zip(images, unit(res.images), res.params):
            row = rows[0]
            entries = table[row["subpolicy"]]
            # The ops that ran are the sub-policy's, in its order, each at a magnitude from its bin.
            ran = iter(range(len(entries)))
            positions = [next(j for j in ran if entries[j][0] == name) for name in row["ops"]]
            for j, magnitude in zip(positions, row["magnitudes"]):
                name, _, magnitude_bin = entries[j]
                if magnitude is not None and not name.startswith("translate"):  # translations: in pixels
                    lo, hi = auto_augment_bin(name, magnitude_bin)
                    assert lo - 1e-3 <= magnitude <= hi + 1e-3 or (name == "posterize" and magnitude == int(lo))
            error = np.abs(out - apply_reported(image, row))[2:-2, 2:-2].mean() * 255
            # DALI's equalize is OpenCV's, Kornia's PIL's: up to 9/255 apart on these small images.
            limit = 1e-4 if backend == "kornia" else 12.0 if "equalize" in row["ops"] else 1.0
            assert error <= limit, (row, error)


def test_kornia_picks_per_batch_and_dali_per_sample(small_images):
    chain = wb.Chain(seed=2).add("RandAugment", n=1, magnitude=10)
    kornia = chain.run(small_images, backend="kornia").params
    dali = chain.run(small_images, backend="dali").params
    assert len({tuple(rows[0]["ops"]) for rows in kornia}) == 1
    assert len({tuple(rows[0]["ops"]) for rows in dali}) > 1
    assert "once per batch" in wb.get_op("RandAugment").dali.note


def test_one_op_at_one_magnitude_agrees_across_backends(small_images):
    """The parity case beside a geometric one: a fixed-sign op at a fixed magnitude."""
    for ops in ({"color": [0.3, 0.3]}, {"brightness": [1.25, 1.25]}, {"contrast": [0.6, 0.6]},
                {"sharpness": [1.7, 1.7]}, {"solarize": [0.4, 0.4]}, {"auto_contrast": []}):
        chain = wb.Chain(seed=1).add("TrivialAugment", ops=ops)
        k, d = (unit(chain.run(small_images, backend=b).images) for b in BACKENDS)
        error = np.mean([np.abs(a - b)[2:-2, 2:-2].mean() for a, b in zip(k, d)]) * 255
        assert error <= 0.5, (ops, error)


# ---------------------------------------------------------------------------------------
# Exports and the app
# ---------------------------------------------------------------------------------------
def test_exports_lower_to_the_libraries_policies():
    chain = wb.Chain(seed=1).add("RandAugment", n=1, magnitude=9, ops={"shear_x": [-18.0, 18.0], "equalize": []})
    kornia = chain.export("kornia")
    assert "K.auto.RandAugment(n=1, m=9, policy=[[('shear_x', -0.1, 0.1)], [('equalize', 0.0, 1.0)]])" in kornia
    dali = chain.export("dali")
    for needle in ("from nvidia.dali.auto_aug.core import select", "s1_ops = (policy_shear_x, policy_equalize, )",
                   "images = select(s1_ops, s1_choice[0], images, s1_magnitude_1)",
                   "fn.random.uniform(range=(0.0, 1.0), shape=(2,), seed=op_seed(seed, 1, 1))"):
        assert needle in dali, needle
    # The export copies the policies its step draws from (runtime/dali_policies.py), with their imports.
    assert "def policy_rotate(" not in dali and "import augmentations as auto_aug" not in dali
    rotating = wb.Chain(seed=1).add("RandAugment", n=1, ops={"rotate": [-30.0, 30.0]}).export("dali")
    assert "from nvidia.dali.auto_aug import augmentations as auto_aug" in rotating
    assert "def policy_rotate(" in rotating and "auto_aug.rotate.op(" in rotating
    assert "auto_aug" not in wb.Chain().add("Rotate").export("dali")
    assert "K.auto.AutoAugment(policy='cifar10')" in wb.Chain().add("AutoAugment", policy="cifar10").export("kornia")


@pytest.mark.parametrize("backend", BACKENDS)
def test_mixed_size_photos_save_equals_run(tmp_path, backend):
    """Photos of different sizes (Kornia then runs the policies image by image): the exported
    file's --save still gives chain.run's images and draws bit for bit."""
    chain = wb.Chain(seed=3).add("AutoAugment").add("TrivialAugment")
    script = tmp_path / "aug.py"
    chain.export(backend, path=script.name, folder=tmp_path)
    run_script(script, "--images", str(ROOT / "sample_data"), "--seed", "4", "--save", str(tmp_path / "out.npz"))
    saved = np.load(tmp_path / "out.npz")
    expected = chain.run(wb.load_images(ROOT / "sample_data"), backend=backend, seed=4)
    assert len(expected.images) == 12 and len({i.shape for i in expected.images}) > 1
    for n, image in enumerate(expected.images):
        assert np.array_equal(saved[f"image_{n:05d}"], image), n
    choice = saved["params.step1_AutoAugment.policy_choice"].reshape(12)
    assert choice.tolist() == [rows[0]["subpolicy"] for rows in expected.params]


def test_app_edits_the_op_set_and_shows_the_chosen_ops(small_images):
    app = wb.Workbench(images=small_images[:2], debounce_s=0, draws=1, cell=32,
                       chain=wb.Chain(seed=4).add("TrivialAugment"))
    controls = app.steps_box.children[0].step_controls["ops"].op_controls
    for name, (box, _) in controls.items():
        box.value = name in ("rotate", "invert")  # invert is not in TrivialAugment's default set: ticked here
    controls["rotate"][1].value = 40.0
    assert app.chain.steps[0].params["ops"] == {"rotate": [-40.0, 40.0], "invert": []}
    rows = app.inspect(0, 0)
    assert rows[0]["ops"][0] in ("rotate", "invert")
    assert f"ops=[{rows[0]['ops'][0]}]" in app.inspector.value
    controls["invert"][0].value = False
    controls["rotate"][0].value = False  # an empty set: refused, the chain keeps its last valid one
    assert "parameter &#x27;ops&#x27; must map one or more op names" in app.message.value  # HTML-escaped
    assert app.chain.steps[0].params["ops"] == {"rotate": [-40.0, 40.0]}


@pytest.mark.cuda
def test_dali_policies_on_the_gpu_match_the_cpu(small_images):
    chain = wb.Chain(seed=2).add("RandAugment", n=2, magnitude=12, ops=NO_EQUALIZE).add("AutoAugment")
    cpu = chain.run(small_images, backend="dali", device="cpu")
    gpu = chain.run(small_images, backend="dali", device="cuda")
    assert [r[0]["ops"] for r in cpu.params] == [r[0]["ops"] for r in gpu.params]
    assert np.abs(np.asarray(cpu.images, np.float64) - np.asarray(gpu.images, np.float64)).mean() < 1.0
