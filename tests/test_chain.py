"""Chain: validation messages, and lossless dict/JSON/YAML round trips."""
import json

import numpy as np
import pytest

import workbench as wb
from workbench.backends.run import checked_chain
from workbench.model import FORMAT_NAME, FORMAT_VERSION

from conftest import DESIGN_CHAIN, random_step_dict


@pytest.mark.parametrize("k", range(8))
def test_round_trip_every_op_random_params(tmp_path, k):
    rng = np.random.default_rng(1000 + k)
    steps = [random_step_dict(op, rng) for op in wb.list_ops()]
    steps[k]["enabled"] = False
    data = {"seed": int(rng.integers(0, 2**31 - 1)), "steps": steps}
    chain = wb.Chain.from_dict(data)
    d = chain.to_dict()
    # Chains without groups stay version 1, readable by workbenches from before groups.
    assert d["version"] == 1 and d["format"] == FORMAT_NAME and d["seed"] == data["seed"]
    # Every parameter, p and enabled flag survives.
    for given, kept in zip(steps, d["steps"]):
        assert kept["op"] == given["op"] and kept["p"] == given["p"] and kept["enabled"] == given["enabled"]
        assert kept["params"] == given["params"]
    assert wb.Chain.from_dict(d) == chain
    assert wb.Chain.from_json(chain.to_json()) == chain
    assert wb.Chain.from_yaml(chain.to_yaml()) == chain
    for name in ("c.yaml", "c.yml", "c.json"):
        chain.save(tmp_path / name)
        loaded = wb.Chain.load(tmp_path / name)
        assert loaded == chain and loaded.to_dict() == d


def test_design_example_defaults_filled():
    chain = wb.Chain.from_dict(DESIGN_CHAIN)
    rrc = chain.steps[0]
    assert rrc.params == {"size": [224, 224], "scale": [0.5, 1.0], "ratio": [0.75, 1.3333], "interpolation": "bilinear",
                          "antialias": False}
    assert chain.steps[1].p == 0.5 and chain.steps[3].p == 1.0 and chain.seed == 7
    assert [s.op for s in chain.steps] == ["RandomResizedCrop", "HorizontalFlip", "Rotate", "Brightness", "Normalize"]


def test_saved_files_carry_version(tmp_path, design_chain):
    design_chain.save(tmp_path / "c.json")
    raw = json.loads((tmp_path / "c.json").read_text())
    assert raw["version"] == 1 and raw["format"] == FORMAT_NAME
    design_chain.save(tmp_path / "c.yaml")
    assert "version: 1" in (tmp_path / "c.yaml").read_text()


def test_builder_api():
    chain = wb.Chain(seed=3).add("Rotate", degrees=[-10, 10]).add("HorizontalFlip")
    assert chain.steps[1].p == 0.5 and chain.steps[0].params["degrees"] == [-10.0, 10.0]
    assert wb.Chain.from_dict(chain.to_dict()) == chain


BAD = [
    ({"steps": [{"op": "Rotat"}]}, r"unknown op 'Rotat'.*did you mean Rotate"),
    ({"steps": [{"op": "Rotate", "params": {"angle": [1, 2]}}]},
     r"step 1 \(Rotate\): unknown parameter 'angle'; Rotate takes: degrees, interpolation"),
    ({"steps": [{"op": "Rotate", "params": {"degrees": "big"}}]},
     r"step 1 \(Rotate\): parameter 'degrees' must be a pair \[lo, hi\] within \[-180.0, 180.0\]"),
    ({"steps": [{"op": "Rotate", "params": {"degrees": [20, -20]}}]},
     r"'degrees' has lo > hi \(20.0 > -20.0\); write it as \[-20.0, 20.0\]"),
    ({"steps": [{"op": "Rotate", "params": {"degrees": [-200, 20]}}]}, r"'degrees' must lie within \[-180.0, 180.0\]"),
    ({"steps": [{"op": "HorizontalFlip", "p": 1.5}]},
     r"step 1 \(HorizontalFlip\): p must be a number in \[0, 1\], got 1.5"),
    ({"steps": [{"op": "HorizontalFlip", "p": -0.1}]}, r"p must be a number in \[0, 1\]"),
    ({"steps": [{"op": "HorizontalFlip", "p": float("nan")}]}, r"p must be a number in \[0, 1\], got nan"),
    ({"steps": [{"op": "Brightness", "params": {"factor": [float("nan"), 1]}}]}, r"'factor' must be finite, got nan"),
    ({"steps": [{"op": "Brightness", "params": {"factor": [0.5, float("inf")]}}]}, r"'factor' must be finite, got inf"),
    ({"steps": [{"op": "Resize", "params": {"size": [0, 10]}}]}, r"'size' sides must be in \[1, 8192\] pixels"),
    ({"steps": [{"op": "Resize", "params": {"size": [10.5, 10]}}]}, r"'size' must be an integer, got 10.5"),
    ({"steps": [{"op": "Resize", "p": 0.5}]}, r"Resize must apply to every sample .* p must be 1.0"),
    ({"steps": [{"op": "GaussianBlur", "params": {"kernel_size": 4}}]}, r"'kernel_size' must be an odd integer, got 4"),
    ({"steps": [{"op": "Rotate", "params": {"interpolation": "cubic"}}]},
     r"'interpolation' must be one of \['bilinear', 'nearest'\], got 'cubic'"),
    ({"steps": [{"op": "Normalize", "params": {"std": [0, 1, 1]}}]}, r"'std' values must be in \[1e-06, 100.0\]"),
    ({"steps": [{"op": "Normalize", "params": {"mean": [0.5, 0.5]}}]}, r"'mean' must be a list of 3 numbers"),
    ({"steps": [{"op": "Resize", "params": {"antialias": 1}}]}, r"'antialias' must be true or false, got 1"),
    ({"steps": [{"op": "Rotate", "params": {"degrees": [True, 2]}}]}, r"'degrees' must be a number, got True"),
    ({"steps": []}, r"the chain has no steps"),
    ({"steps": "Rotate"}, r"'steps' must be a list of steps"),
    ({"seed": -1, "steps": [{"op": "HorizontalFlip"}]}, r"seed must be an integer in \[0, 2147483647\], got -1"),
    ({"seed": 1.5, "steps": [{"op": "HorizontalFlip"}]}, r"seed must be an integer"),
    ({"steps": [{"op": "HorizontalFlip", "enabled": "yes"}]}, r"'enabled' must be true or false"),
    ({"steps": [{"op": "HorizontalFlip", "prob": 0.5}]}, r"step 1: unknown key\(s\) \['prob'\]"),
    ({"steps": [{"params": {}}]}, r"step 1: missing 'op'"),
    ({"steps": [{"op": "HorizontalFlip"}], "extra": 1}, r"unknown chain key\(s\) \['extra'\]"),
    ({"version": FORMAT_VERSION + 1, "steps": [{"op": "HorizontalFlip"}]},
     rf"chain format version {FORMAT_VERSION + 1} is not supported"),
    ({"format": "other", "steps": [{"op": "HorizontalFlip"}]}, r"'format' must be 'augmentation-workbench/chain'"),
    ([1, 2], r"a chain must be a mapping"),
    ({"steps": [{"op": "HorizontalFlip"}, {"op": "Rotate", "params": {"degrees": [5, 1]}}]}, r"^step 2 \(Rotate\)"),
]


@pytest.mark.parametrize("data,message", BAD, ids=[m[:40] for _, m in BAD])
def test_validation_errors_name_the_problem(data, message):
    with pytest.raises(wb.ChainError, match=message):
        wb.Chain.from_dict(data)


def test_failed_edit_keeps_the_chain(design_chain):
    before = design_chain.to_dict()
    with pytest.raises(wb.ChainError):
        design_chain.add("Rotate", degrees=[30, 10])
    with pytest.raises(wb.ChainError):
        design_chain.add("Nope")
    assert design_chain.to_dict() == before


def test_edits_made_directly_are_revalidated(design_chain):
    design_chain.steps[2].params["degrees"] = [50, -50]
    with pytest.raises(wb.ChainError, match=r"step 3 \(Rotate\).*lo > hi"):
        design_chain.run([np.zeros((8, 8, 3), np.uint8)])
    with pytest.raises(wb.ChainError, match=r"step 3 \(Rotate\)"):
        design_chain.export("kornia")


def test_a_chain_that_ran_is_checked_again_after_an_edit_and_on_new_sizes():
    """run_chain keeps the chains (and the image sizes) that passed its checks: a run after an edit made
    directly, on a smaller image, or on a backend that lacks an op is refused as the first run would be."""
    chain = wb.Chain(seed=1).add("CenterCrop", size=[16, 16]).add("Rotate")
    images = [np.zeros((24, 24, 3), np.uint8)]
    for _ in range(2):
        assert chain.run(images).images.shape == (1, 16, 16, 3)
    with pytest.raises(wb.InputError, match=r"step 1 \(CenterCrop\).*larger than image 1 \(12x12"):
        chain.run([np.zeros((12, 12, 3), np.uint8)])
    with pytest.raises(wb.InputError, match=r"larger than image 2 \(12x30"):
        chain.run(images + [np.zeros((12, 30, 3), np.uint8)])
    chain.steps[1].params["degrees"] = [50, -50]
    with pytest.raises(wb.ChainError, match=r"step 2 \(Rotate\).*lo > hi"):
        checked_chain(chain, "kornia")  # (the export checks it too, which chain.run would meet next)
    with pytest.raises(wb.ChainError, match=r"step 2 \(Rotate\).*lo > hi"):
        chain.run(images)
    distorted = wb.Chain(seed=1).add("OpticalDistortion")
    distorted.run(images, backend="kornia")
    with pytest.raises(wb.UnsupportedOpError, match=r"OpticalDistortion cannot run on dali with device='cpu'"):
        distorted.run(images, backend="dali")


def test_save_refuses_unknown_extension(tmp_path, design_chain):
    with pytest.raises(wb.ChainError, match=r"end in .yaml, .yml or .json"):
        design_chain.save(tmp_path / "chain.txt")
    with pytest.raises(wb.ChainError, match=r"cannot read chain file"):
        wb.Chain.load(tmp_path / "missing.yaml")
