"""torchvision's MixUp and CutMix (TorchvisionMixUp, TorchvisionCutMix) do what torchvision does: each
image with the one before it, one lambda (and one box) for the batch. On Kornia with torch's generator
they give torchvision's own images and labels for the same seed; every backend gives torchvision's
formula at the draws it reports; imported v2.MixUp and v2.CutMix become them; targets follow.
"""
from __future__ import annotations


import cv2
import numpy as np
import pytest
import torch

import workbench as wb
from workbench.runtime.torchvision_mixing import tv_cutmix_box, tv_roll_partners

BACKENDS = ["kornia", "albumentations", "dali"]


@pytest.fixture(scope="module")
def batch():
    """Six sample photos at 48 x 64, and their labels 0-5."""
    images = [cv2.resize(np.asarray(i), (64, 48), interpolation=cv2.INTER_AREA) for i in wb.load_images()[:6]]
    return images, np.arange(6)


def test_the_pairing_and_the_box_are_torchvisions():
    assert tv_roll_partners(3) == [2, 0, 1]
    # lam 0.75: half-sides int(0.25 x 40) = 10 and int(0.25 x 20) = 5, around (10, 0), cut at the top
    assert tv_cutmix_box(0.75, 10, 0, 20, 40) == [0, 0, 20, 5]
    assert tv_cutmix_box(1.0, 3, 3, 8, 8) == [3, 3, 3, 3]  # lambda 1: nothing pasted


@pytest.mark.parametrize("op, name", [("TorchvisionMixUp", "MixUp"), ("TorchvisionCutMix", "CutMix")])
def test_kornia_gives_torchvisions_images_and_labels_for_the_same_seed(v2, batch, op, name):
    images, labels = batch
    for seed, alpha in ((3, 1.0), (8, 0.4)):
        theirs = getattr(v2, name)(alpha=alpha, num_classes=6)
        torch.manual_seed(seed)
        x = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).float() / 255.0
        expected, expected_labels = theirs(x, torch.as_tensor(labels))
        chain = wb.Chain.from_torchvision(v2.Compose([theirs]), seed=seed)
        assert [(s.op, s.params) for s in chain.steps] == [(op, {"alpha": alpha})]
        res = chain.run(images, backend="kornia", labels=labels)
        assert np.abs(res.images - expected.permute(0, 2, 3, 1).numpy()).max() < 1e-6, seed
        assert np.abs(res.labels - expected_labels.numpy()).max() < 1e-6, seed


@pytest.mark.parametrize("order", ["mixup_first", "cutmix_first"])
def test_kornia_gives_torchvisions_random_choice_of_the_two_for_the_same_seed(v2, batch, order):
    """RandomChoice([MixUp, CutMix]) (the classification reference's batch mixing) imports as one step and,
    on Kornia, draws the choice and the mixing as torchvision does: its images and labels for a seed."""
    images, labels = batch
    chosen = set()
    for seed, p in ((0, [0.5, 0.5]), (1, [0.5, 0.5]), (2, [0.3, 0.7]), (4, [0.5, 0.5]), (5, [0.9, 0.1])):
        mixers = [v2.MixUp(alpha=0.4, num_classes=6), v2.CutMix(alpha=1.0, num_classes=6)]
        mixers = mixers[::-1] if order == "cutmix_first" else mixers
        theirs = v2.RandomChoice(mixers, p=p)
        torch.manual_seed(seed)
        x = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).float() / 255.0
        expected, expected_labels = theirs(x, torch.as_tensor(labels))
        chain = wb.Chain.from_torchvision(v2.Compose([theirs]), seed=seed)
        share = p[1] if order == "cutmix_first" else p[0]
        assert [(s.op, s.params) for s in chain.steps] == [("TorchvisionMixUpOrCutMix", {
            "mixup_alpha": 0.4, "cutmix_alpha": 1.0, "mixup_share": pytest.approx(share),
            "cutmix_first": order == "cutmix_first"})]
        res = chain.run(images, backend="kornia", labels=labels)
        assert np.abs(res.images - expected.permute(0, 2, 3, 1).numpy()).max() < 1e-6, seed
        assert np.abs(res.labels - expected_labels.numpy()).max() < 1e-6, seed
        chosen.add(int(res.params[0][0]["choice"]))
    assert chosen == {0, 1}  # both were drawn, so both were compared


def _formula(images, row_of, op):
    """torchvision's MixUp or CutMix on float images at the reported partner, weight and box (for the
    choice of the two, the one its `choice` names)."""
    x = np.stack(images).astype(np.float64)
    out = x.copy()
    for n in range(len(images)):
        row = row_of(n)
        partner = int(row["partner"])
        if op == "TorchvisionMixUp" or (op == "TorchvisionMixUpOrCutMix" and not row["choice"]):
            out[n] = (1.0 - row["weight"]) * x[n] + row["weight"] * x[partner]
        else:
            x0, y0, x1, y1 = (int(v) for v in row["box"])
            out[n, y0:y1, x0:x1] = x[partner, y0:y1, x0:x1]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["TorchvisionMixUp", "TorchvisionCutMix", "TorchvisionMixUpOrCutMix"])
def test_every_backend_gives_torchvisions_formula_at_its_draws(batch, backend, op):
    """The image before each is its partner, one weight (and box) for the batch, the labels mixed by
    the same weight; the pixels are the formula's within uint8 rounding. The choice of the two picks
    one per batch, both over a few seeds, and reports an empty box for MixUp."""
    images, labels = batch
    weights, choices = [], []
    settings = {"mixup_alpha": 0.7, "cutmix_alpha": 0.7} if op == "TorchvisionMixUpOrCutMix" else {"alpha": 0.7}
    for seed in (5, 6, 7, 8, 9, 10):
        res = wb.Chain(seed=seed).add(op, **settings).run(images, backend=backend, labels=labels)
        rows = [row[0] for row in res.params]
        assert [int(r["partner"]) for r in rows] == [5, 0, 1, 2, 3, 4]
        assert len({round(float(r["weight"]), 6) for r in rows}) == 1 and 0.0 <= rows[0]["weight"] <= 1.0
        if op == "TorchvisionMixUpOrCutMix":
            assert len({r["choice"] for r in rows}) == 1 and rows[0]["choice"] in (0.0, 1.0)
            choices.append(rows[0]["choice"])
            if not rows[0]["choice"]:
                assert all(list(r["box"]) == [0.0, 0.0, 0.0, 0.0] for r in rows)
        if op == "TorchvisionCutMix" or (op == "TorchvisionMixUpOrCutMix" and rows[0]["choice"]):
            assert len({tuple(r["box"]) for r in rows}) == 1
            x0, y0, x1, y1 = rows[0]["box"]
            assert rows[0]["weight"] == pytest.approx((x1 - x0) * (y1 - y0) / (48 * 64), abs=1e-6)
        expected = _formula(images, lambda n: rows[n], op)
        got = np.stack(res.images).astype(np.float64) * (255.0 if backend == "kornia" else 1.0)
        assert np.abs(got - expected).max() <= (1e-3 if backend == "kornia" else 0.5 + 1e-3)
        weight = float(rows[0]["weight"])
        for n in range(6):
            row = np.zeros(6)
            row[n] += 1.0 - weight
            row[(n - 1) % 6] += weight
            assert np.allclose(res.labels[n], row, atol=1e-6)
        weights.append(weight)
    assert len(set(weights)) == 6 and max(weights) > 0.05  # (draws differ per seed, and something was mixed)
    assert op != "TorchvisionMixUpOrCutMix" or set(choices) == {0.0, 1.0}


@pytest.mark.parametrize("backend", BACKENDS)
def test_cutmix_boxes_follow_torchvisions_rule(batch, backend):
    """A box spans 2 x int(r x side) along each side it is not cut on by a border, for one
    r = 0.5 sqrt(1 - lambda) on both sides."""
    images, _ = batch
    whole = 0
    for seed in range(20):
        res = wb.Chain(seed=seed).add("TorchvisionCutMix", alpha=2.0).run(images, backend=backend)
        x0, y0, x1, y1 = (int(v) for v in res.params[0][0]["box"])
        free = [(x1 - x0) / 2 if 0 < x0 and x1 < 64 else None, (y1 - y0) / 2 if 0 < y0 and y1 < 48 else None]
        for half in free:
            if half is not None:
                whole += 1
                assert half.is_integer(), (seed, x0, y0, x1, y1)
        if None not in free:
            r = max(free[0] / 64, free[1] / 48)  # the r that gives both half-sides
            assert int(r * 64) == free[0] and int(r * 48) == free[1], (seed, x0, y0, x1, y1)
    assert whole >= 6


def test_cutmix_targets_take_the_partners_mask_in_the_box(batch):
    images, _ = batch
    masks = [np.full((48, 64), n + 1, np.uint8) for n in range(6)]
    res = wb.Chain(seed=2).add("TorchvisionCutMix").run(images, backend="kornia", masks=masks)
    x0, y0, x1, y1 = (int(v) for v in res.params[0][0]["box"])
    for n, mask in enumerate(res.targets.masks):
        inside = np.zeros((48, 64), bool)
        inside[y0:y1, x0:x1] = True
        assert (mask[inside] == (n - 1) % 6 + 1).all() and (mask[~inside] == n + 1).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_choice_moves_targets_as_the_mixer_it_chose(batch, backend):
    """CutMix's batches: masks take the partner's labels inside the box; MixUp's: each sample keeps its
    boxes and gains its partner's."""
    images, _ = batch
    masks = [np.full((48, 64), n + 1, np.uint8) for n in range(6)]
    boxes = [np.array([[2.0 + n, 3.0, 20.0, 30.0]]) for n in range(6)]
    seen = set()
    for seed in range(8):
        res = wb.Chain(seed=seed).add("TorchvisionMixUpOrCutMix").run(images, backend=backend, masks=masks,
                                                                       boxes=boxes)
        row = res.params[0][0]
        seen.add(row["choice"])
        if row["choice"]:
            x0, y0, x1, y1 = (int(v) for v in row["box"])
            inside = np.zeros((48, 64), bool)
            inside[y0:y1, x0:x1] = True
            for n, mask in enumerate(res.targets.masks):
                assert (mask[inside] == (n - 1) % 6 + 1).all() and (mask[~inside] == n + 1).all()
        else:
            for n, moved in enumerate(res.targets.boxes):
                assert np.array_equal(moved, np.concatenate([boxes[n], boxes[(n - 1) % 6]]))
    assert seen == {0.0, 1.0}


def test_a_p_or_a_group_is_refused_saying_why():
    with pytest.raises(wb.ChainError, match="torchvision's has no p"):
        wb.Chain().add("TorchvisionMixUp", p=0.5)
    with pytest.raises(wb.ChainError, match="TorchvisionCutMix blends samples of one batch"):
        wb.Chain.from_dict({"steps": [{"op": "OneOf", "steps": [{"op": "TorchvisionCutMix"}]}]}).validate()
