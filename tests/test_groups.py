"""Groups (OneOf, SomeOf, Sequential): chosen per sample on every backend, reported, serialized,
exported and reproduced bit for bit."""
import json

import numpy as np
import pytest
from PIL import Image

import workbench as wb
from workbench.model import FORMAT_VERSION, Step
from workbench.codegen import emit, load_module
from workbench.errors import ChainError

from conftest import assert_save_equals_run
from dali_graph_check import merged_cpu_inputs_of_gpu_operators

BACKENDS = ["kornia", "dali", "albumentations"]


def tiny_images(count: int, size: int = 8, seed: int = 0) -> list[np.ndarray]:
    """Random uint8 images whose inversion and flips all differ from each other."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (size, size, 3), dtype=np.uint8) for _ in range(count)]


def as_float(images) -> np.ndarray:
    out = np.asarray(images)
    return out.astype(np.float64) / 255.0 if out.dtype == np.uint8 else out.astype(np.float64)


def invert(x):
    return 1.0 - x


def vflip(x):
    return x[::-1]


def hflip(x):
    return x[:, ::-1]


def nested_chain(seed: int = 5) -> wb.Chain:
    return (wb.Chain(seed=seed)
            .add("OneOf", p=0.8, weights=[1, 2], steps=[
                Step.create("Rotate", degrees=[-20, 20]),
                Step.create("SomeOf", n=2, steps=[Step.create("Invert", p=1.0), Step.create("GaussianBlur"),
                                                  Step.create("Solarize", p=0.7)])])
            .add("Sequential", p=0.5, steps=[Step.create("HorizontalFlip", p=1.0), Step.create("Brightness")]))


# ----- the model --------------------------------------------------------------------------

def test_groups_round_trip_through_dict_json_and_yaml(tmp_path):
    chain = nested_chain()
    data = chain.to_dict()
    # Groups need version 2; a chain is written with the lowest version that holds it.
    assert data["version"] == 2 and FORMAT_VERSION >= 2
    group = data["steps"][0]
    assert group["op"] == "OneOf" and group["params"] == {"weights": [1.0, 2.0]} and group["p"] == 0.8
    assert [s["op"] for s in group["steps"]] == ["Rotate", "SomeOf"]
    assert [s["op"] for s in group["steps"][1]["steps"]] == ["Invert", "GaussianBlur", "Solarize"]
    assert wb.Chain.from_dict(data) == chain
    assert wb.Chain.from_json(chain.to_json()) == chain
    assert wb.Chain.from_yaml(chain.to_yaml()) == chain
    chain.save(tmp_path / "c.yaml")
    assert wb.Chain.load(tmp_path / "c.yaml") == chain
    # Chains without groups keep format version 1 (readable by workbenches from before groups).
    assert wb.Chain().add("Invert").to_dict()["version"] == 1


def test_enabled_ops_open_groups_and_skip_disabled_children():
    chain = nested_chain()
    chain.steps[0].steps[1].steps[1].enabled = False
    assert [s.op for s in chain.enabled_ops()] == ["Rotate", "Invert", "Solarize", "HorizontalFlip", "Brightness"]
    assert chain.unsupported_ops("kornia") == []


@pytest.mark.parametrize("data, message", [
    ({"op": "OneOf", "steps": []}, r"step 1 \(OneOf\): a group needs a non-empty list 'steps'"),
    ({"op": "OneOf"}, r"needs a non-empty list 'steps'"),
    ({"op": "OneOf", "params": {"weights": [1]}, "steps": [{"op": "Invert"}, {"op": "Rotate"}]},
     r"'weights' has 1 value\(s\) for 2 child step\(s\)"),
    ({"op": "OneOf", "params": {"weights": [1, -1]}, "steps": [{"op": "Invert"}, {"op": "Rotate"}]},
     r"finite numbers >= 0"),
    ({"op": "OneOf", "params": {"weights": [0, 0]}, "steps": [{"op": "Invert"}, {"op": "Rotate"}]},
     r"positive sum"),
    ({"op": "SomeOf", "params": {"n": 3}, "steps": [{"op": "Invert"}, {"op": "Rotate"}]},
     r"n=3 but the group has 2 child step\(s\)"),
    ({"op": "OneOf", "steps": [{"op": "Normalize"}]},
     r"step 1.1 \(Normalize\) cannot be inside a group: Normalize must apply to every sample"),
    ({"op": "Sequential", "steps": [{"op": "Invert"}, {"op": "MixUp"}]},
     r"step 1.2 \(MixUp\) cannot be inside a group: MixUp blends samples"),
    ({"op": "Invert", "steps": [{"op": "Rotate"}]}, r"only groups \(OneOf, SomeOf, Sequential\) hold 'steps'"),
    ({"op": "OneOf", "steps": [{"op": "Invert", "enabled": False}]}, r"every child step is disabled"),
    ({"op": "OneOf", "steps": [{"op": "Rotate", "params": {"degrees": [5, 1]}}]}, r"^step 1.1 \(Rotate\)"),
    ({"op": "OneOf", "steps": [{"op": "Sequential", "steps": [{"op": "Sequential", "steps": [
        {"op": "Sequential", "steps": [{"op": "Sequential", "steps": [{"op": "Invert"}]}]}]}]}]},
     r"groups nest at most 4 deep"),
])
def test_bad_groups_are_refused_naming_the_step_and_the_fix(data, message):
    with pytest.raises(ChainError, match=message):
        wb.Chain.from_dict({"steps": [data]})


# ----- per-sample choice, on every backend -------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_one_of_runs_exactly_the_reported_child_on_each_sample(backend):
    images = tiny_images(24)
    chain = wb.Chain(seed=3).add("OneOf", steps=[Step.create("Invert", p=1.0), Step.create("VerticalFlip", p=1.0)])
    res = chain.run(images, backend=backend)
    out = as_float(res.images)
    chosen = []
    for n, (image, row) in enumerate(zip(images, res.params)):
        group = row[0]
        assert group["op"] == "OneOf" and group["applied"] and len(group["chosen"]) == 1
        k = group["chosen"][0]
        expected = (invert if k == 1 else vflip)(as_float(image))
        np.testing.assert_allclose(out[n], expected, atol=1e-6)
        assert [child["applied"] for child in group["steps"]] == [k == 1, k == 2]
        assert [child["step"] for child in group["steps"]] == ["1.1", "1.2"]
        chosen.append(k)
    assert set(chosen) == {1, 2}, "24 samples all chose the same child"


@pytest.mark.parametrize("backend", BACKENDS)
def test_some_of_runs_n_children_in_group_order(backend):
    images = tiny_images(24, seed=1)
    chain = wb.Chain(seed=4).add("SomeOf", n=2, steps=[Step.create("Invert", p=1.0), Step.create("VerticalFlip", p=1.0),
                                                       Step.create("HorizontalFlip", p=1.0)])
    res = chain.run(images, backend=backend)
    out = as_float(res.images)
    pairs = set()
    for n, (image, row) in enumerate(zip(images, res.params)):
        chosen = row[0]["chosen"]
        assert len(chosen) == 2 and chosen == sorted(chosen)
        expected = as_float(image)
        for k in chosen:
            expected = (invert, vflip, hflip)[k - 1](expected)
        np.testing.assert_allclose(out[n], expected, atol=1e-6)
        pairs.add(tuple(chosen))
    assert len(pairs) >= 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_sequential_gates_its_children_together(backend):
    images = tiny_images(24, seed=2)
    chain = wb.Chain(seed=9).add("Sequential", p=0.5, steps=[Step.create("Invert", p=1.0),
                                                             Step.create("VerticalFlip", p=1.0)])
    res = chain.run(images, backend=backend)
    out = as_float(res.images)
    applied = []
    for n, (image, row) in enumerate(zip(images, res.params)):
        group = row[0]
        expected = vflip(invert(as_float(image))) if group["applied"] else as_float(image)
        np.testing.assert_allclose(out[n], expected, atol=1e-6)
        assert [c["applied"] for c in group["steps"]] == [group["applied"]] * 2
        assert group.get("chosen") == ([1, 2] if group["applied"] else None)
        applied.append(group["applied"])
    assert 0 < sum(applied) < len(applied)


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_of_follows_its_weights_and_a_chosen_child_keeps_its_own_p(backend):
    images = tiny_images(300, seed=3)
    chain = wb.Chain(seed=21).add("OneOf", p=0.9, weights=[1, 3], steps=[
        Step.create("Invert", p=1.0), Step.create("VerticalFlip", p=0.5)])
    rows = [row[0] for row in chain.run(images, backend=backend).params]
    applied = [r for r in rows if r["applied"]]
    assert 0.84 <= len(applied) / len(rows) <= 0.96  # p = 0.9
    second = [r for r in applied if r["chosen"] == [2]]
    assert 0.67 <= len(second) / len(applied) <= 0.83  # weight 3 of 4
    flipped = sum(r["steps"][1]["applied"] for r in second) / len(second)
    assert 0.38 <= flipped <= 0.62  # VerticalFlip's own p = 0.5
    # A sample that did not choose a child has no draws for it.
    assert not any(r["steps"][1]["applied"] for r in applied if r["chosen"] == [1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_draws_inside_groups_are_reported_per_sample(backend):
    images = tiny_images(12, size=16, seed=4)
    chain = wb.Chain(seed=2).add("OneOf", steps=[Step.create("Brightness", factor=[0.5, 0.9]),
                                                 Step.create("Contrast", factor=[1.2, 1.6])])
    res = chain.run(images, backend=backend)
    for row in res.params:
        brightness, contrast = row[0]["steps"]
        ran = brightness if brightness["applied"] else contrast
        assert brightness["applied"] != contrast["applied"]
        value = ran["factor"]
        assert (0.5 <= value <= 0.9) if ran is brightness else (1.2 <= value <= 1.6)
        idle = contrast if ran is brightness else brightness
        assert "factor" not in idle


def test_the_same_seed_draws_the_same_choices_and_another_seed_others():
    images = tiny_images(16, seed=5)
    chain = nested_chain()
    first = chain.run(images, backend="kornia")
    again = chain.run(images, backend="kornia")
    other = chain.run(images, backend="kornia", seed=6)
    assert np.array_equal(first.images, again.images) and first.params == again.params
    assert json.dumps(first.params) != json.dumps(other.params)


# ----- export == run ------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_export_reproduces_groups_bit_for_bit(backend, small_folder, tmp_path):
    chain = nested_chain()
    assert_save_equals_run(chain, small_folder, tmp_path, seeds=[5, 8], backend=backend)
    saved = np.load(tmp_path / "out_5.npz")
    prefix = "params.step1_OneOf."
    child = "params.step1.2_SomeOf." if backend == "dali" else prefix + "child2."
    assert prefix + "selected" in saved and child + "selected" in saved
    expected = chain.run(wb.load_images(small_folder), backend=backend, seed=5)
    chosen = [row[0].get("chosen") for row in expected.params]
    assert [list(np.flatnonzero(s) + 1) if a > 0.5 else None
            for s, a in zip(saved[prefix + "selected"], saved[prefix + ("applied" if backend == "dali"
                                                                         else "batch_prob")])] == chosen


@pytest.mark.parametrize("backend", BACKENDS)
def test_groups_on_images_of_several_sizes_report_each_samples_child(backend, tmp_path):
    """Images of several sizes run one by one on Kornia, whose records are then joined: a child
    that no image of a part chose has drawn nothing there (this raised a KeyError once)."""
    images = [np.ascontiguousarray(wb.load_images(wb.SAMPLE_DATA)[k][:h, :w]) for k, (h, w) in
              enumerate([(60, 80), (72, 64), (50, 90), (64, 64), (80, 70), (66, 66)])]
    chain = wb.Chain.from_dict({"seed": 2, "steps": [{"op": "OneOf", "steps": [
        {"op": "Rotate", "p": 1.0}, {"op": "Affine", "p": 1.0}]}, {"op": "Resize", "params": {"size": [48, 48]}}]})
    res = chain.run(images, backend=backend)
    chosen = [row[0]["chosen"] for row in res.params]
    assert sorted({c[0] for c in chosen}) == [1, 2]
    for row, [k] in zip(res.params, chosen):
        drawn, other = row[0]["steps"][k - 1], row[0]["steps"][2 - k]
        assert "angle" in drawn and "angle" not in other
    folder = tmp_path / "mixed"
    folder.mkdir()
    for n, image in enumerate(images):
        Image.fromarray(image).save(folder / f"{n}.png")
    assert_save_equals_run(chain, folder, tmp_path, seeds=[2], backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_exported_source_shows_the_groups_as_nested_steps(backend):
    src = nested_chain().export(backend)
    assert "#   1. OneOf(weights=[1.0, 2.0]) of 2 step(s) p=0.8" in src
    assert "#       1.2.1. Invert p=1" in src
    if backend != "dali":
        assert "StepGroup('one', [" in src and "StepGroup('some', [" in src and "], p=0.8, weights=[1.0, 2.0])," in src
    else:
        assert "fn.random.choice(2, p=[0.3333333333333333, 0.6666666666666666]" in src


def test_dali_groups_define_their_gpu_graphs():
    module = load_module(emit(nested_chain(), "dali"), "dali")
    for pipe in (module.preview_pipeline(aug_seed=1, gpu=True, keep=True, batch_size=4, num_threads=1, device_id=None),
                 module.training_pipeline(["a.jpg", "b.jpg"], [0, 1], gpu=True, batch_size=4, num_threads=1,
                                          device_id=None)):
        assert merged_cpu_inputs_of_gpu_operators(pipe) == []


def test_kornia_runs_each_child_only_on_the_samples_that_chose_it():
    """A child costs what its samples cost: it sees only their sub-batch."""
    import torch

    module = load_module(emit(wb.Chain(seed=1).add("OneOf", steps=[Step.create("Rotate", p=1.0),
                                                                    Step.create("VerticalFlip", p=1.0)]), "kornia"),
                         "kornia")
    group = module.place(module.build_augmentation(), "cpu")[0]
    seen = []
    for child in group.steps:
        child.register_forward_pre_hook(lambda mod, args: seen.append(args[0].shape[0]))
    with torch.no_grad():
        torch.manual_seed(0)
        module.apply_steps([group], torch.rand(10, 3, 4, 4))
    assert sum(seen) == 10 and len(seen) == 2


@pytest.mark.cuda
@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_groups_run_on_cuda_with_the_cpu_draws(backend, small_images):
    chain = nested_chain()
    gpu = chain.run(small_images, backend=backend, device="cuda")
    cpu = chain.run(small_images, backend=backend, device="cpu")
    assert gpu.images.shape == cpu.images.shape
    if backend == "kornia":  # Kornia draws on the CPU generator whatever the device
        assert gpu.params == cpu.params
    assert np.abs(np.asarray(gpu.images, np.float64) - np.asarray(cpu.images, np.float64)).mean() < 2 / 255 * (
        255 if gpu.images.dtype == np.uint8 else 1)
