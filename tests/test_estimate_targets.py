"""The estimate with targets (coco=, masks=): it measures the loader that --bench --coco --masks
runs, on the annotated files as they are, and times moving a batch's targets alone."""
from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pytest
from PIL import Image

import workbench as wb
from workbench.codegen.options import everything
from workbench.cli import main as cli_main
from workbench.codegen import load_module
from workbench.estimate import advise
from workbench.estimate.files import annotated_batch, prepare_annotated
from workbench.estimate.result import Estimate, StageCost, StepCost
from workbench.targets import SAMPLE_TARGETS

from conftest import annotated_folder

SHORT = dict(batch_size=4, runs=1, batches=1, warmup=1, progress=False)
CROP = {"op": "RandomResizedCrop", "params": {"size": [48, 48]}}
ROTATE = {"op": "Rotate", "p": 1.0, "params": {"degrees": [-20, 20]}}


def chain_of(*steps):
    return wb.Chain.from_dict({"seed": 4, "steps": list(steps)})


def with_strays(root, sizes, stray_size=(70, 50)):
    """An annotated folder with two more images that have no annotations, of another size."""
    folder, coco, masks = annotated_folder(root, sizes)
    for n in range(2):
        Image.fromarray(np.full((*stray_size, 3), 90, np.uint8)).save(folder / f"stray{n}.png")
    return folder, coco, masks


@pytest.mark.parametrize("backend, workers", [("kornia", 0), ("dali", 1), ("albumentations", 0)])
def test_the_estimate_and_bench_read_the_same_targets_and_the_stage_moves_a_batch(backend, workers, tmp_path,
                                                                                  monkeypatch, capsys):
    """In this process, to watch the calls: the whole-loader figure comes from the export's
    bench_rates with the very coco= and masks= that --bench --coco --masks passes, and the targets
    stage moves a whole batch of the annotated images' targets with the export's augment_targets."""
    folder, coco, masks = with_strays(tmp_path, [(64, 80)] * 3)
    chain = chain_of(ROTATE, {"op": "HorizontalFlip"})
    module = load_module(chain.export(backend, **asdict(everything(backend))), backend)
    bench_calls, moved = [], []
    bench_rates, augment_targets = module.bench_rates, module.augment_targets

    def spy_bench(*args, **kwargs):
        bench_calls.append((args, kwargs))
        return bench_rates(*args, **kwargs)

    def spy_targets(records, sizes, targets, *rest):
        moved.append((sizes, {kind: len(values) for kind, values in targets.items()}))
        return augment_targets(records, sizes, targets, *rest)

    monkeypatch.setattr(module, "bench_rates", spy_bench)
    monkeypatch.setattr(module, "augment_targets", spy_targets)
    est = chain.estimate(backend=backend, images=folder, coco=coco, masks=masks, workers=workers, isolate=False,
                         **SHORT)
    (estimate_args, estimate_kwargs), = bench_calls
    assert (estimate_kwargs["coco"], estimate_kwargs["masks"]) == (str(coco), str(masks))
    # Only the three annotated files, at their own size: the strays (another size) are not read.
    assert est.image_size == (64, 80) and any("your 3 annotated file(s) as they are" in n for n in est.notes)
    stage = est.stages["targets"]
    assert stage.images_per_s == pytest.approx(4 / (stage.ms_per_batch / 1000), rel=1e-6)
    assert "boxes, keypoints and masks" in stage.detail
    # Whatever the loader moved while timed, the stage moved whole batches of 4 annotated images.
    kinds = {"boxes": 4, "box_labels": 4, "keypoints": 4, "keypoints_visible": 4, "masks": 4}
    assert (([(64, 80)] * 4), kinds) in [([tuple(s) for s in sizes], k) for sizes, k in moved]
    bench_calls.clear()
    module.main(["--images", str(folder), "--bench", "--coco", str(coco), "--masks", str(masks), "--batch-size", "4",
                 "--workers", str(workers), "--runs", "1", "--batches", "1", "--warmup", "1", "--device", "cpu"])
    (bench_args, bench_kwargs), = bench_calls
    assert estimate_args[:8] == bench_args[:8]  # root, batch, batches, warm-up, runs, workers, seed, device
    assert (bench_kwargs["coco"], bench_kwargs["masks"]) == (str(coco), str(masks))
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("images/s: ")


def test_an_estimate_with_targets_reads_them_in_the_loader(tmp_path):
    """In the fresh measuring process: a mask that cannot be read stops the loader, and the
    estimate names it (an estimate that ignored the targets would not notice)."""
    folder, coco, masks = annotated_folder(tmp_path, [(64, 80)] * 3)
    (masks / "img1.png").write_bytes(b"not a png")
    with pytest.raises(wb.WorkbenchError, match=r"measuring failed.*img1\.png"):
        chain_of(ROTATE).estimate(images=folder, coco=coco, masks=masks, workers=0, **SHORT)


def test_boxes_alone_and_masks_alone_say_what_they_move(tmp_path):
    folder, coco, masks = annotated_folder(tmp_path, [(64, 80)] * 3)
    chain = chain_of(ROTATE)
    boxes = chain.estimate(backend="albumentations", images=folder, coco=coco, workers=0, **SHORT)
    alone = chain.estimate(backend="albumentations", images=folder, masks=masks, workers=0, **SHORT)
    assert "boxes and keypoints on one CPU core" in boxes.stages["targets"].detail
    assert "a batch's masks on one CPU core" in alone.stages["targets"].detail
    assert list(boxes.stages) == ["decode", "augment", "targets"]


def test_several_sizes_need_a_size_fixing_step_on_kornia_and_dali(tmp_path):
    folder, coco, masks = annotated_folder(tmp_path, [(64, 80), (72, 60), (60, 90)])
    for backend in ("kornia", "dali"):
        with pytest.raises(wb.InputError, match=r"3 sizes .*start the chain with a step that fixes the size"):
            chain_of(ROTATE).estimate(backend=backend, images=folder, coco=coco, **SHORT)
    est = chain_of(CROP, ROTATE).estimate(images=folder, coco=coco, masks=masks, workers=0, **SHORT)
    assert any("resized to their median" in n for n in est.notes) and "targets" in est.stages
    est = chain_of(ROTATE).estimate(backend="albumentations", images=folder, coco=coco, workers=0, **SHORT)
    assert "targets" in est.stages  # Albumentations reads images of any size, one at a time


@pytest.mark.parametrize("kwargs, message", [
    ({"image_size": 64}, r"image_size=\[64, 64\]: with targets the estimate decodes your annotated files as they are"),
    ({"images": "glob"}, r"annotate a folder of image files .*give that folder as images="),
    ({"coco": "missing.json"}, r"coco='.*missing\.json': no such file"),
    ({"masks": "nowhere"}, r"masks='.*nowhere': no such folder"),
])
def test_bad_target_settings_are_named_before_measuring(kwargs, message, tmp_path):
    folder, coco, masks = annotated_folder(tmp_path, [(64, 80)] * 2)
    given = {"images": folder, "coco": coco, "masks": masks, **kwargs}
    given["images"] = str(folder / "*.png") if given["images"] == "glob" else given["images"]
    for key in ("coco", "masks"):
        if isinstance(given[key], str):
            given[key] = tmp_path / given[key]
    with pytest.raises(wb.InputError, match=message):
        chain_of(ROTATE).estimate(**given, **SHORT)


def test_a_folder_without_annotated_images_is_named(tmp_path):
    folder, coco, _ = annotated_folder(tmp_path, [(64, 80)] * 2)
    data = json.loads(coco.read_text())
    data["images"] = [{"id": 9, "file_name": "elsewhere.png"}]
    data["annotations"] = []
    coco.write_text(json.dumps(data))
    with pytest.raises(wb.InputError, match="no image under .* has annotations"):
        chain_of(ROTATE).estimate(images=folder, coco=coco, **SHORT)


def test_a_chain_that_cannot_move_targets_is_refused_before_measuring(unfollowed_op, tmp_path):
    folder, coco, _ = annotated_folder(tmp_path, [(64, 80)] * 2)
    chain = wb.Chain(seed=0).add("Rotate").add(unfollowed_op)
    with pytest.raises(wb.UnsupportedOpError, match=f"cannot estimate with targets: {unfollowed_op} cannot move"):
        chain.estimate(backend="kornia", images=folder, coco=coco, **SHORT)


def test_the_annotated_batch_repeats_the_files_with_their_own_targets():
    inp = prepare_annotated(None, SAMPLE_TARGETS / "instances.json", SAMPLE_TARGETS / "masks", mixed_sizes=True)
    images, targets = annotated_batch(inp, 6)
    reference, given = wb.load_annotated()
    assert [image.shape for image in images] == [reference[n % 4].shape for n in range(6)]
    for kind, values in targets.items():
        for n, value in enumerate(values):
            assert np.array_equal(value, given[kind][n % 4]), (kind, n)


def test_load_annotated_reads_only_up_to_its_limit():
    images, targets = wb.load_annotated(limit=2)
    everything, _ = wb.load_annotated()
    assert [i.source for i in images] == [i.source for i in everything[:2]]
    assert all(len(values) == 2 for values in targets.values())


def _targets_bound(backend: str, device: str, steps: list[StepCost]) -> Estimate:
    stages = {"decode": StageCost("decode", 900.0, 70.0), "augment": StageCost("augment", 1200.0, 53.0),
              "targets": StageCost("targets", 200.0, 320.0, "moving a batch's masks")}
    return Estimate(backend, device, 64, (256, 256), 2, 150.0, [150.0], stages, steps)


def test_advice_when_moving_targets_limits(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    steps = [StepCost(1, "Rotate", 5.0, 0.3, (256, 256), (256, 256)),
             StepCost(2, "GridDistortion", 12.0, 0.7, (256, 256), (256, 256))]
    advice = advise(_targets_bound("albumentations", "cpu", steps), target=400)
    assert advice.limiting_stage == "targets" and "The limit is moving targets: 200 images/s" in advice.verdict
    assert any(s.startswith("GridDistortion moves each mask pixel by pixel") for s in advice.suggestions)
    assert any("more workers (this machine has 8 cores, the estimate used 2)" in s for s in advice.suggestions)
    kornia = advise(_targets_bound("kornia", "cpu", steps[:1]), target=400)
    assert any("move masks on the device" in s for s in kornia.suggestions)
    assert not any("pixel by pixel" in s for s in kornia.suggestions)  # no displacement field in this chain


def test_the_command_line_estimates_the_sample_photos_with_their_targets(tmp_path, capsys):
    chain = tmp_path / "chain.yaml"
    chain_of(CROP, ROTATE).save(chain)
    code = cli_main(["estimate", str(chain), "--annotated", "--backend", "albumentations", "--batch-size", "4",
                     "--workers", "0", "--runs", "1", "--batches", "1", "-q", "--json", str(tmp_path / "e.json")])
    out = capsys.readouterr().out
    assert code == 0 and "moving targets" in out and "your 4 annotated file(s) as they are" in out
    saved = json.loads((tmp_path / "e.json").read_text())[0]
    assert saved["stages"]["targets"]["detail"].startswith("moving a batch's boxes, keypoints and masks")
    assert cli_main(["estimate", str(chain), "--annotated", "--image-size", "64", "-q"]) == 2
    assert "leave image_size out" in capsys.readouterr().err
