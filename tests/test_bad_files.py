"""Training loaders that survive a bad file, `workbench check`, and resuming at (epoch, batch)
(issue 32), on every backend, with the hand-made bad files of tests/data/bad_images.

The folder used: three classes of solid-colour images (blue, green, red: labels 0, 1, 2), so
that a batch shows by its pixels which file each sample came from, and the bad files put among
them. The chain only flips, which keeps each image's colour.
"""
from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import workbench as wb
from workbench.codegen import emit, load_module
from workbench.codegen.options import export_options
from workbench.errors import InputError
from workbench.runtime.bad_files import BadImageError, decode_checked, read_exclusions
from workbench.runtime.sampling import EpochSampler

BAD = Path(__file__).parent / "data" / "bad_images"
BAD_FILES = ("broken_chunk.png", "empty.jpg", "notes.jpg", "truncated.jpg")
COLOURS = {"blue": (20, 30, 230), "green": (20, 220, 40), "red": (230, 30, 20)}  # labels 0, 1, 2 (name order)
CHAIN = wb.Chain.from_dict({"seed": 11, "steps": [{"op": "HorizontalFlip", "p": 0.5}]})
BACKENDS = ("kornia", "albumentations", "dali")


@pytest.fixture(scope="module")
def modules():
    return {backend: load_module(emit(CHAIN, backend), backend) for backend in BACKENDS}


def solid(folder: Path, name: str, colour, size=(24, 32)):
    folder.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((*size, 3), colour, np.uint8)).save(folder / name, quality=95)


@pytest.fixture()
def good_folder(tmp_path):
    root = tmp_path / "train"
    for name, colour in COLOURS.items():
        for k in range(3):
            solid(root / name, f"{k}.jpg", colour)
    return root


@pytest.fixture()
def bad_folder(good_folder):
    """The good folder with the four bad files spread over the classes (9 readable, 4 not)."""
    for name, folder in zip(BAD_FILES, ("blue", "green", "red", "red")):
        shutil.copy(BAD / name, good_folder / folder / f"x_{name}")
    return good_folder


def label_of_pixels(image) -> int:
    """The class a solid image's colour says (its strongest channel: blue 2 -> 0, green 1 -> 1, red 0 -> 2)."""
    channels = np.asarray(image, dtype=np.float64).reshape(-1, 3).mean(axis=0) if np.asarray(image).shape[-1] == 3 \
        else np.asarray(image, dtype=np.float64).reshape(3, -1).mean(axis=1)
    return {2: 0, 1: 1, 0: 2}[int(np.argmax(channels))]


# ---------------------------------------------------------------------------------------
# What is wrong with each bad file, in words
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, problem", [("truncated.jpg", "truncated (the file ends before its image does)"),
                                           ("empty.jpg", "empty file (0 bytes)"),
                                           ("notes.jpg", "not an image file (it starts b'These are my not')"),
                                           ("broken_chunk.png", "damaged (OSError: broken data stream")])
def test_decode_checked_names_the_file_what_is_wrong_and_both_fixes(name, problem):
    with pytest.raises(BadImageError) as caught:
        decode_checked(BAD / name)
    line = str(caught.value)
    assert "\n" not in line and line.startswith(f"{BAD / name}: {problem}")
    assert "--skip-bad" in line and "--exclude bad.txt" in line and "workbench check" in line
    assert caught.value.name == str(BAD / name) and caught.value.problem.startswith(problem)


def test_a_file_gone_since_the_folder_was_listed_is_named_as_missing(modules, good_folder):
    with pytest.raises(BadImageError, match=r"gone\.jpg: missing \(gone since its folder was listed\); to skip"):
        decode_checked(good_folder / "gone.jpg")
    dataset = modules["kornia"].ImageFolderDataset(good_folder, skip_bad=True)
    (good_folder / "red" / "2.jpg").unlink()
    image, label, skipped = dataset[8]  # red/2.jpg: the next readable file (wrapping: blue/0.jpg) instead
    assert label == 0 == label_of_pixels(image) and skipped == ((str(good_folder / "red" / "2.jpg"),
                                                                  "missing (gone since its folder was listed)"),)


# ---------------------------------------------------------------------------------------
# By default: one line naming the file, exit status 1, no traceback (the exported scripts)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_an_exported_loader_stops_at_a_truncated_file_with_one_line_naming_it(backend, tmp_path, good_folder):
    shutil.copy(BAD / "truncated.jpg", good_folder / "red" / "zz_truncated.jpg")
    script = tmp_path / f"aug_{backend}.py"
    CHAIN.export(backend, path=script)
    run = subprocess.run([sys.executable, str(script), "--images", str(good_folder), "--epochs", "1",
                          "--batch-size", "10", "--workers", "1", "--device", "cpu"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{good_folder / 'red' / 'zz_truncated.jpg'}: truncated"), run.stderr
    assert "--skip-bad" in last and "--exclude" in last


@pytest.mark.parametrize("backend", ("kornia", "albumentations"))
@pytest.mark.parametrize("bad", BAD_FILES)
def test_the_torch_loaders_raise_one_line_for_each_kind_of_bad_file(modules, backend, bad, good_folder):
    shutil.copy(BAD / bad, good_folder / "green" / f"x_{bad}")
    loop = modules[backend].training_batches(str(good_folder), 10, epochs=1, workers=1, seed=1, device="cpu")
    with pytest.raises(modules[backend].BadImageError) as caught:  # (the program's own class)
        list(loop)
    line = str(caught.value)
    # The worker's traceback is gone: the line alone, as in this process.
    assert line.startswith(f"{good_folder / 'green' / f'x_{bad}'}: ") and "\n" not in line, line


@pytest.mark.parametrize("bad", ["empty.jpg", "notes.jpg", "truncated.jpg"])
def test_the_dali_loader_names_the_file_its_decoder_failed_on(modules, bad, good_folder):
    shutil.copy(BAD / bad, good_folder / "green" / f"x_{bad}")
    with pytest.raises(modules["dali"].BadImageError) as caught:  # (at the first batch, read as the loader starts)
        loader = modules["dali"].make_loader(str(good_folder), 10, seed=1, gpu=False, threads=1)
        for _ in modules["dali"].training_epochs(loader, 1):
            pass
    assert str(caught.value).startswith(f"{good_folder / 'green' / f'x_{bad}'}: "), caught.value


def test_save_stops_with_one_line_or_leaves_the_file_out_with_skip_bad(modules, bad_folder, tmp_path, capsys):
    module = modules["kornia"]
    with pytest.raises(SystemExit) as stopped:
        module.main(["--images", str(bad_folder), "--save", str(tmp_path / "a.npz")])
    assert str(stopped.value).startswith(str(bad_folder / "blue" / "x_broken_chunk.png"))
    module.main(["--images", str(bad_folder), "--save", str(tmp_path / "b.npz"), "--skip-bad"])
    out = capsys.readouterr().out
    assert "left out 4 unreadable file(s)" in out and all(f"x_{name}" in out for name in BAD_FILES)
    # What is saved is the preview of the readable files, in name order.
    good = [f for f in sorted(bad_folder.rglob("*.*")) if not f.name.startswith("x_")]
    expected = CHAIN.run([decode_checked(f) for f in good], backend="kornia", device="cpu").images
    assert np.array_equal(np.load(tmp_path / "b.npz")["images"], expected)


# ---------------------------------------------------------------------------------------
# --skip-bad: full batches, labels that go with their images, equal batch counts per rank
# ---------------------------------------------------------------------------------------
def torch_epochs(module, root, rank, world, monkeypatch, epochs=2, batch_size=3, **options):
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setenv("WORLD_SIZE", str(world))
    return [(epoch, images.clone(), labels.clone()) for epoch, images, labels in
            module.training_batches(str(root), batch_size, epochs=epochs, workers=1, seed=5, device="cpu", **options)]


@pytest.mark.parametrize("backend", ("kornia", "albumentations"))
def test_skip_bad_keeps_batches_full_labels_paired_and_ranks_equal(modules, backend, bad_folder, monkeypatch, capsys):
    module = modules[backend]
    ranks = [torch_epochs(module, bad_folder, rank, 2, monkeypatch, skip_bad=True) for rank in (0, 1)]
    # 13 files, 7 per rank (one repeated), 2 batches of 3 per epoch on each rank.
    assert [len(batches) for batches in ranks] == [4, 4]
    for batches in ranks:
        for _, images, labels in batches:
            assert images.shape[0] == 3
            assert [label_of_pixels(image) for image in images] == labels.tolist()
    report = capsys.readouterr().out
    # Each file passed over is named at the end of the epoch it was met in, with what is wrong.
    assert "epoch 0: skipped" in report and "each replaced in its batch by the next readable file" in report
    # Every sample is on some rank each epoch: between them the ranks met every bad file.
    assert all(f"x_{name}: " in report for name in BAD_FILES), report


def test_the_dali_loader_decodes_ahead_with_skip_bad_and_names_the_files_each_epoch(modules, bad_folder, capsys):
    module = modules["dali"]
    loader = module.make_loader(str(bad_folder), 3, seed=1, gpu=False, threads=2, skip_bad=True)
    assert sorted(Path(name).name for name, _ in loader.skipped) == sorted(f"x_{name}" for name in BAD_FILES)
    batches = [(epoch, batch[0]["images"], batch[0]["labels"]) for epoch, batch in module.training_epochs(loader, 2)]
    assert len(batches) == 6  # 9 readable files, 3 batches of 3 per epoch
    for _, images, labels in batches:
        assert [label_of_pixels(image) for image in images] == labels.ravel().tolist()
    report = capsys.readouterr().out
    assert report.count("skipped 4 unreadable file(s), left out of the reader's list") == 2
    assert all(f"x_{name}: " in report for name in BAD_FILES)


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_loader_takes_the_checks_exclusion_list(modules, backend, bad_folder, tmp_path):
    listed = wb.check_images(bad_folder, full=True, dali=False).write_exclusions(tmp_path / "bad.txt")
    assert read_exclusions(listed) == {f"{folder}/x_{name}" for name, folder in
                                       zip(BAD_FILES, ("blue", "green", "red", "red"))}
    module = modules[backend]
    if backend == "dali":
        loader = module.make_loader(str(bad_folder), 3, seed=1, gpu=False, threads=1, exclude=str(listed))
        labels = [int(y) for _, batch in module.training_epochs(loader, 1) for y in batch[0]["labels"].ravel()]
    else:
        labels = [int(y) for _, _, ys in module.training_batches(str(bad_folder), 3, epochs=1, workers=1, seed=1,
                                                                  device="cpu", exclude=str(listed)) for y in ys]
    assert sorted(labels) == [0, 0, 0, 1, 1, 1, 2, 2, 2]  # the 9 readable files, each once


def shard_with_a_bad_member(folder: Path) -> Path:
    """One tar shard: six solid images (classes 0, 1, 2 twice) and a truncated one, key s06."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "train-0000.tar"
    with tarfile.open(path, "w") as tar:
        for k in range(7):
            colour = list(COLOURS.values())[k % 3]
            data = io.BytesIO()
            Image.fromarray(np.full((24, 32, 3), colour, np.uint8)).save(data, "JPEG", quality=95)
            members = [("jpg", data.getvalue() if k < 6 else (BAD / "truncated.jpg").read_bytes()),
                       ("cls", str(k % 3).encode())]
            for extension, payload in members:
                info = tarfile.TarInfo(f"s{k:02d}.{extension}")
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
    return path


@pytest.mark.parametrize("backend", ("kornia", "dali"))
def test_a_bad_shard_member_is_named_by_shard_and_key_and_skipped(backend, tmp_path, monkeypatch):
    module = load_module(emit(CHAIN, backend, options=export_options(CHAIN, backend, shards=True)), backend)
    shard = shard_with_a_bad_member(tmp_path / "shards")
    # Batches of one: no sample is dropped with an incomplete last batch.
    if backend == "kornia":
        def labels(**options):
            return [int(y) for _, _, ys in module.training_batches(shards=str(shard), batch_size=1, epochs=1,
                                                                    workers=0, seed=1, device="cpu", **options)
                    for y in ys]
    else:
        def labels(**options):
            loader = module.make_loader(shards=str(shard), batch_size=1, seed=1, gpu=False, threads=1, **options)
            return [int(y) for _, batch in module.training_epochs(loader, 1) for y in batch[0]["labels"].ravel()]
    with pytest.raises(module.BadImageError, match="truncated") as caught:
        labels()
    assert str(caught.value).startswith("train-0000.tar:s06: truncated")
    skipped = labels(skip_bad=True)
    assert len(skipped) == (7 if backend == "kornia" else 6)
    listed = wb.check_images(str(shard), full=True, dali=False)
    assert listed.bad == [("train-0000.tar:s06", "truncated (the file ends before its image does)")]
    excluded = labels(exclude=str(listed.write_exclusions(tmp_path / "bad.txt")))
    assert sorted(excluded) == [0, 0, 1, 1, 2, 2]


# ---------------------------------------------------------------------------------------
# The estimate: the same one line as an InputError, or skip_bad
# ---------------------------------------------------------------------------------------
def test_the_estimate_names_a_bad_file_or_skips_it(bad_folder):
    options = dict(backend="kornia", batch_size=3, workers=1, runs=1, batches=1, warmup=0, progress=False,
                   isolate=False, images=str(bad_folder))
    # (The first file whose header is unreadable: the estimate reads the headers first.)
    with pytest.raises(InputError, match=r"green/x_empty\.jpg: empty file \(0 bytes\); .*--skip-bad"):
        CHAIN.estimate(**options)
    assert CHAIN.estimate(skip_bad=True, **options).images_per_s > 0


# ---------------------------------------------------------------------------------------
# workbench check
# ---------------------------------------------------------------------------------------
def test_check_finds_empty_text_and_truncated_files_from_headers_and_every_one_decoding(bad_folder):
    quick = wb.check_images(bad_folder, workers=2)
    assert {Path(name).name for name, _ in quick.bad} == {"x_empty.jpg", "x_notes.jpg", "x_truncated.jpg"}
    assert dict(quick.bad)["red/x_truncated.jpg"] == "truncated (no end-of-image marker at its end)"
    full = wb.check_images(bad_folder, full=True, workers=2, dali=False)
    assert {Path(name).name for name, _ in full.bad} == {f"x_{name}" for name in BAD_FILES}
    good = [row for row in full.rows if not row[5]]
    assert len(good) == 9 and {row[1:5] for row in good} == {("JPEG", "RGB", 24, 32)}
    table = full.table()
    assert "13 file(s) checked (full decode (PIL))" in table and "4 unreadable" in table
    assert "JPEG    RGB          9" in table and "24 x 32" in table


def test_check_decodes_with_dali_where_it_is_installed(bad_folder):
    pytest.importorskip("nvidia.dali")
    report = wb.check_images(bad_folder, full=True, workers=1, dali=True)
    assert report.decoders == ("PIL", "DALI") and len(report.bad) == 4


def test_the_check_command_writes_the_list_and_exits_1_when_a_file_is_unreadable(bad_folder, tmp_path):
    listed = tmp_path / "bad.txt"
    run = subprocess.run([sys.executable, "-m", "workbench", "check", str(bad_folder), "--exclude-list", str(listed)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    assert "3 unreadable" in run.stdout and f"wrote {listed}" in run.stdout
    assert len(read_exclusions(listed)) == 3
    again = subprocess.run([sys.executable, "-m", "workbench", "check", str(bad_folder), "--exclude", str(listed)],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "10 file(s) checked" in again.stdout and "0 unreadable" in again.stdout


# ---------------------------------------------------------------------------------------
# Resume at (epoch, batch): the batches and draws of an uninterrupted run
# ---------------------------------------------------------------------------------------
@pytest.fixture()
def varied_folder(tmp_path):
    """Ten images that differ (so that a wrong order or a wrong draw shows in the pixels)."""
    root = tmp_path / "varied"
    rng = np.random.default_rng(0)
    for k in range(10):
        (root / ("a" if k < 5 else "b")).mkdir(parents=True, exist_ok=True)
        image = rng.integers(0, 255, (24, 32, 3), dtype=np.uint8)
        Image.fromarray(image).save(root / ("a" if k < 5 else "b") / f"{k}.png")
    return root


RESUME_CHAIN = wb.Chain.from_dict({"seed": 4, "steps": [
    {"op": "HorizontalFlip", "p": 0.5}, {"op": "Brightness", "params": {"factor": [0.6, 1.4]}},
    {"op": "Rotate", "p": 0.7, "params": {"degrees": [-30, 30]}}]})


@pytest.mark.parametrize("backend", ("kornia", "albumentations"))
@pytest.mark.parametrize("world", (1, 2))
def test_a_resumed_torch_loader_gives_the_uninterrupted_runs_batches_bit_for_bit(backend, world, varied_folder,
                                                                                  monkeypatch):
    module = load_module(emit(RESUME_CHAIN, backend), backend)
    for rank in range(world):
        whole = torch_epochs(module, varied_folder, rank, world, monkeypatch, epochs=3, batch_size=2)
        per_epoch = len(whole) // 3
        for epoch, batch in ((1, 1), (2, 0), (0, per_epoch - 1)):
            resumed = torch_epochs(module, varied_folder, rank, world, monkeypatch, epochs=3, batch_size=2,
                                   resume=(epoch, batch))
            tail = whole[epoch * per_epoch + batch:]
            assert len(resumed) == len(tail)
            for (e1, x1, y1), (e2, x2, y2) in zip(tail, resumed):
                assert e1 == e2 and torch.equal(x1, x2) and torch.equal(y1, y2)
        # Not the same batches every epoch (so the test sees a wrong epoch).
        assert not torch.equal(whole[0][1], whole[per_epoch][1])


def test_a_resumed_dali_loader_gives_the_uninterrupted_runs_batches_from_a_checkpoint_or_without(varied_folder,
                                                                                                 tmp_path):
    module = load_module(emit(RESUME_CHAIN, "dali"), "dali")
    folder = tmp_path / "checkpoints"

    def run(**options):
        loader = module.make_loader(str(varied_folder), 2, seed=3, gpu=False, threads=2, **options)
        return [(epoch, batch[0]["images"].clone(), batch[0]["labels"].clone())
                for epoch, batch in module.training_epochs(loader, 3)]

    whole = run(checkpoints=str(folder), checkpoint_every=2)
    assert len(whole) == 15 and len(list(folder.glob("dali-rank0-*.ckpt"))) == 9  # every 2 batches, each epoch's end
    for start in ((1, 3), (2, 0), (0, 1)):
        for where in (str(folder), None):  # from the nearest checkpoint, or reading from the start
            resumed = run(checkpoints=where, resume=start)
            tail = whole[start[0] * 5 + start[1]:]
            assert len(resumed) == len(tail)
            assert all(e1 == e2 and torch.equal(x1, x2) and torch.equal(y1, y2)
                       for (e1, x1, y1), (e2, x2, y2) in zip(tail, resumed))


@pytest.mark.parametrize("backend", BACKENDS)
def test_resume_on_the_command_line(backend, varied_folder, capsys):
    module = load_module(emit(RESUME_CHAIN, backend), backend)
    module.main(["--images", str(varied_folder), "--epochs", "2", "--batch-size", "2", "--workers", "1",
                 "--device", "cpu", "--resume", "1:3"])
    assert "rank 0/1: 4 augmented images over 2 epoch(s)" in capsys.readouterr().out  # batches 3 and 4 of epoch 1
    with pytest.raises(SystemExit):
        module.main(["--images", str(varied_folder), "--resume", "1-3"])
    assert "expected EPOCH:BATCH" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="resume at epoch 2, batch 0: the epoch must be from 0 to 1"):
        module.main(["--images", str(varied_folder), "--epochs", "2", "--device", "cpu", "--resume", "2:0"])


def test_the_epoch_sampler_splits_each_epoch_over_ranks_and_resumes_inside_it():
    ranks = [EpochSampler(11, batch_size=2, seed=3, rank=r, world_size=3) for r in range(3)]
    for epoch in (0, 1):
        for sampler in ranks:
            sampler.set_epoch(epoch)
        orders = [[i for i, _, _ in sampler] for sampler in ranks]
        assert [len(order) for order in orders] == [4, 4, 4]  # 11 padded to 12
        assert sorted(set(sum(orders, []))) == list(range(11))
    first = [i for i, _, _ in ranks[0]]
    ranks[0].set_epoch(1, start_batch=1)
    assert [item for item in ranks[0]] == [(i, 1, 1) for i in first[2:]] and len(ranks[0]) == 2
    ranks[0].set_epoch(0)
    assert [i for i, _, _ in ranks[0]] != first  # another order each epoch


# ---------------------------------------------------------------------------------------
# The Kornia loader's GPU decoding path (a stand-in decoder on the CPU; tests/test_cuda.py and
# test_kornia_loader_decode.py run the real ones on CUDA)
# ---------------------------------------------------------------------------------------
def gpu_path_batches(module, root, decode, skip_bad):
    from torch.utils.data import DataLoader

    dataset = module.EncodedImageFolderDataset(root, skip_bad=skip_bad)
    loader = module.GpuDecodingLoader(DataLoader(dataset, batch_size=len(dataset), collate_fn=module.collate_encoded),
                                      decode, torch.device("cpu"), "stand-in", skip_bad=skip_bad)
    return list(module.one_line_errors(loader))


def test_the_gpu_decoding_path_names_or_replaces_a_file_no_decoder_reads(modules, good_folder):
    module = modules["kornia"]
    # A JPEG whole to its end marker whose data no decoder reads: the worker passes its bytes on, the
    # GPU decoder refuses it (None), PIL refuses it in the main process too.
    whole = (BAD / "truncated.jpg").read_bytes() + b"\xff\xd9"
    (good_folder / "green" / "x_broken.jpg").write_bytes(whole[:200] + bytes(400) + b"\xff\xd9")

    def refuse_broken(encoded):  # a stand-in GPU decoder: PIL's pixels, None where it cannot read
        out = []
        for data in encoded:
            try:
                out.append(module.decode_bytes_with_pil(data))
            except module.BadImageError:
                out.append(None)
        return out

    with pytest.raises(module.BadImageError, match=r"green/x_broken\.jpg: ") as caught:
        gpu_path_batches(module, good_folder, refuse_broken, skip_bad=False)
    assert "\n" not in str(caught.value)
    shutil.copy(BAD / "truncated.jpg", good_folder / "red" / "x_truncated.jpg")  # cut short: PIL in the worker
    [(images, labels, skipped)] = gpu_path_batches(module, good_folder, refuse_broken, skip_bad=True)
    assert len(images) == 11 and [label_of_pixels(image) for image in images] == labels.tolist()
    assert sorted(Path(name).name for name, _ in skipped) == ["x_broken.jpg", "x_truncated.jpg"]
