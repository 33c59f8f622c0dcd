"""The loaders' file lists at scale (issue 33): names and labels in numpy arrays, not a Python
object per file; folders listed in one scandir pass; the index file (--index, `workbench index`)
that every loader reads in place of listing the folder."""
from __future__ import annotations

import gc
import os
import subprocess
import sys

import numpy as np
import pytest
import torch.utils.data as torch_data
from PIL import Image

import workbench as wb
from workbench.codegen import emit, load_module
from workbench.codegen.options import export_options
from workbench.runtime.common import list_image_files
from workbench.data import SAMPLE_DATA
from workbench.runtime.file_table import FileTable, Strings
from workbench.targets import SAMPLE_TARGETS

CHAIN = wb.Chain.from_dict({"seed": 3, "steps": [{"op": "HorizontalFlip", "p": 0.5},
                                                 {"op": "Brightness", "params": {"factor": [0.7, 1.3]}}]})
BACKENDS = ("kornia", "albumentations", "dali")


@pytest.fixture()
def folder(tmp_path):
    """Nine images in three class folders (one nested deeper, one with a non-ASCII name), one file
    directly in the root, and files that are not images."""
    root = tmp_path / "train"
    rng = np.random.default_rng(1)
    names = ["b_dogs/1.jpg", "b_dogs/deep/2.png", "a_cats/0.jpg", "a_cats/é.jpg", "c_owls/x.JPG", "c_owls/y.jpeg",
             "c_owls/z.png", "a_cats/w.webp", "top.png"]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (16, 20, 3), dtype=np.uint8)).save(root / name)
    (root / "a_cats" / "notes.txt").write_text("not an image")
    (root / "README").write_text("nor this")
    return root


def test_a_table_lists_what_the_loaders_listed_before_in_their_order_with_imagefolder_labels(folder):
    table = FileTable.listed(folder)
    assert list(table) == list_image_files(folder) == sorted(
        (p for p in folder.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png", ".webp")),
        key=lambda p: p.relative_to(folder).as_posix())
    assert table.classes == ["a_cats", "b_dogs", "c_owls"]
    by_name = dict(zip((table.name(i) for i in range(len(table))), table.labels.tolist()))
    assert by_name == {"a_cats/0.jpg": 0, "a_cats/w.webp": 0, "a_cats/é.jpg": 0, "b_dogs/1.jpg": 1,
                       "b_dogs/deep/2.png": 1, "c_owls/x.JPG": 2, "c_owls/y.jpeg": 2, "c_owls/z.png": 2, "top.png": 0}
    # The state a worker reads: a few numpy arrays, whatever the number of files.
    assert isinstance(table.names.data, np.ndarray) and table.names.data.dtype == np.uint8
    assert table.labels.dtype == np.int32 and table.names.offsets.dtype == np.int64


def test_strings_keep_any_text_and_select_keeps_order():
    texts = ["", "a", "é/ü.jpg", "x" * 300, "日本/猫.png"]
    strings = Strings.of(texts)
    assert list(strings) == texts and len(strings) == 5
    assert list(strings.select([4, 0, 2])) == ["日本/猫.png", "", "é/ü.jpg"]


def test_an_index_file_round_trips_and_refuses_what_is_not_one(folder, tmp_path):
    table = FileTable.listed(folder)
    path = table.save(tmp_path / "train.index")
    assert path.name == "train.index"  # (not train.index.npz)
    loaded = FileTable.load(path, folder)
    assert list(loaded) == list(table) and loaded.labels.tolist() == table.labels.tolist()
    assert loaded.classes == table.classes
    (tmp_path / "junk.index").write_text("hello")
    with pytest.raises(ValueError, match=r"junk\.index: not an index of image files .*workbench index"):
        FileTable.load(tmp_path / "junk.index", folder)
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    with pytest.raises(ValueError, match=r"its first file a_cats/0\.jpg is not under .*other: an index of another"):
        FileTable.load(path, elsewhere)


def test_the_index_command_writes_what_the_loaders_read(folder, tmp_path):
    run = subprocess.run([sys.executable, "-m", "workbench", "index", str(folder), "-o", str(tmp_path / "i.index")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "9 files in 3 class folder(s)" in run.stdout and "--index" in run.stdout
    assert list(FileTable.load(tmp_path / "i.index", folder)) == list_image_files(folder)


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_loader_reads_an_index_in_place_of_the_folder(backend, folder, tmp_path):
    module = load_module(emit(CHAIN, backend), backend)
    index = FileTable.listed(folder).save(tmp_path / "train.index")
    # A class folder added after the index was written: the loader reads the index, not the folder.
    (folder / "d_late").mkdir()
    Image.fromarray(np.zeros((16, 20, 3), np.uint8)).save(folder / "d_late" / "late.png")

    def labels(**options):  # (batches of one: every file is read)
        if backend == "dali":
            loader = module.make_loader(str(folder), 1, seed=2, gpu=False, threads=1, **options)
            return sorted(int(batch[0]["labels"]) for _, batch in module.training_epochs(loader, 1))
        return sorted(int(y) for _, _, ys in module.training_batches(str(folder), 1, epochs=1, workers=1, seed=2,
                                                                      device="cpu", **options) for y in ys)

    assert labels() == [0, 0, 0, 0, 1, 1, 2, 2, 2, 3]  # the folder as it is now
    assert labels(index=str(index)) == [0, 0, 0, 0, 1, 1, 2, 2, 2]  # as it was indexed


@pytest.mark.parametrize("backend", ("kornia", "albumentations"))
def test_the_datasets_hold_no_python_object_per_sample(backend, folder, tmp_path):
    """Copy-on-access: a worker that reads a list of a Python object per file copies its pages.
    No attribute of the datasets (or of their file tables) may be a list or tuple as long as the
    dataset (folder and shard datasets)."""
    module = load_module(emit(CHAIN, backend, options=export_options(CHAIN, backend, shards=backend == "kornia")),
                         backend)
    datasets = [module.ImageFolderDataset(folder) if backend == "kornia" else module.AugmentedImageFolder(folder)]
    # With COCO targets (the sample photos' boxes and keypoints) and masks.
    coco, masks = SAMPLE_TARGETS / "instances.json", SAMPLE_TARGETS / "masks"
    annotated = export_options(CHAIN, backend, targets=True, shards=backend == "kornia")
    with_targets = load_module(emit(CHAIN, backend, options=annotated), backend)
    if backend == "kornia":
        datasets.append(with_targets.ImageFolderDataset(SAMPLE_DATA, with_targets.loader_annotations(
            SAMPLE_DATA, str(coco), str(masks))))
    else:
        datasets.append(with_targets.AugmentedImageFolder(SAMPLE_DATA, coco=str(coco), masks=str(masks)))
    assert len(datasets[-1]) == 4  # the four annotated photos
    if backend == "kornia":
        from test_bad_files import shard_with_a_bad_member

        datasets.append(module.TarShardDataset(str(shard_with_a_bad_member(tmp_path / "shards"))))
    for dataset in datasets:
        values = list(vars(dataset).values()) + list((getattr(dataset, "annotations", None) or {}).values())
        parts = [vars(dataset)] + [vars(value) for value in values if hasattr(value, "__dict__")]
        parts += [dataset.annotations] if getattr(dataset, "annotations", None) else []
        per_sample = [name for part in parts for name, value in part.items()
                      if isinstance(value, (list, tuple)) and len(value) == len(dataset)]
        assert not per_sample, (type(dataset).__name__, per_sample)


@pytest.mark.parametrize("backend", ("kornia", "albumentations"))
def test_the_prefetch_is_said_and_kept_within_its_bound(backend, tmp_path, capsys):
    """Each worker keeps 4 batches ready; a bound gives fewer batches, then fewer workers, and one
    batch over the bound is one line on the command line. A batch of 8 of these 100x150 images:
    8 x 100 x 150 x 3 bytes = 0.36 MB."""
    root = tmp_path / "train"
    root.mkdir()
    for k in range(16):
        Image.fromarray(np.full((100, 150, 3), k, np.uint8)).save(root / f"{k:02d}.png")
    module = load_module(emit(CHAIN, backend), backend)
    make = module.make_loader
    options = {"device": "cpu"} if backend == "kornia" else {}
    plain = make(str(root), 8, workers=2, **options)
    assert (plain.num_workers, plain.prefetch_factor) == (2, 4)
    assert plain.prefetch.startswith("prefetch: 2 worker(s) x 4 batch(es) x 0.4 MB") and "= 3 MB" in plain.prefetch
    assert (lambda loader: (loader.num_workers, loader.prefetch_factor))(
        make(str(root), 8, workers=2, max_prefetch_mb=1.5, **options)) == (2, 2)   # 2 x 2 x 0.36 <= 1.5
    assert (lambda loader: (loader.num_workers, loader.prefetch_factor))(
        make(str(root), 8, workers=2, max_prefetch_mb=0.5, **options)) == (1, 1)   # one batch is all that fits
    with pytest.raises(SystemExit, match=r"--max-prefetch-mb 0\.1 is less than one batch \(0\.4 MB\)"):
        module.main(["--images", str(root), "--bench", "--batch-size", "8", "--max-prefetch-mb", "0.1",
                     "--device", "cpu"])
    module.main(["--images", str(root), "--epochs", "1", "--batch-size", "8", "--workers", "2",
                 "--max-prefetch-mb", "1.5", "--device", "cpu"])
    assert "prefetch: 2 worker(s) x 2 batch(es) x 0.4 MB" in capsys.readouterr().out


def test_the_host_memory_of_a_process_tree_counts_its_children():
    """tree_mb sums this process and every process under it (PSS): a child holding 200 MB shows."""
    from workbench.estimate.host_memory import tree_mb

    before = tree_mb()
    if before is None:
        pytest.skip("no /proc here (the estimate then reports no memory)")
    child = subprocess.Popen([sys.executable, "-c", "import sys, time; b = b'x' * 200_000_000; print(1, flush=True); "
                              "time.sleep(60)"], stdout=subprocess.PIPE)
    try:
        child.stdout.readline()  # (the 200 MB are written)
        during = tree_mb()
    finally:
        child.kill()
        child.wait()
    assert during[1] == before[1] + 1 and during[0] - before[0] > 180


def test_the_estimate_reports_the_loaders_peak_host_memory_and_the_app_shows_it():
    from workbench.ui.estimate_panel import _report_html

    est = CHAIN.estimate(backend="kornia", batch_size=4, image_size=32, workers=2, runs=1, batches=2, warmup=1,
                         progress=False)
    if est.peak_host_mb is None:
        pytest.skip("no /proc here")
    assert est.processes == 3 and est.peak_host_mb > 50  # the measuring process and its two workers
    assert est.memory_line in est.summary() and est.memory_line in est._repr_markdown_()
    assert "host memory at its peak" in _report_html(est, None) and est.to_dict()["peak_host_mb"] == est.peak_host_mb


def test_the_dali_loader_says_its_queue_and_keeps_it_within_the_bound(tmp_path):
    root = tmp_path / "train"
    root.mkdir()
    for k in range(16):
        Image.fromarray(np.full((100, 150, 3), k, np.uint8)).save(root / f"{k:02d}.png")
    module = load_module(emit(CHAIN, "dali"), "dali")
    assert module.make_loader(str(root), 8, gpu=False, threads=1).prefetch.startswith(
        "prefetch: DALI's queue of 2 batch(es) x 0.4 MB")
    bounded = module.make_loader(str(root), 8, gpu=False, threads=1, max_prefetch_mb=0.5)
    assert "queue of 1 batch(es)" in bounded.prefetch
    with pytest.raises(SystemExit, match=r"--max-prefetch-mb 0\.1 is less than one batch \(0\.4 MB\)"):
        module.main(["--images", str(root), "--epochs", "1", "--batch-size", "8", "--max-prefetch-mb", "0.1",
                     "--device", "cpu"])


class _Noted:
    """Writes the pid of the process that finalizes it (a stand-in for a DALI pipeline, whose
    destructor waits forever in a forked process)."""

    def __init__(self, path):
        self.path, self.cycle = path, self

    def __del__(self):
        with open(self.path, "a") as file:
            file.write(f"{os.getpid()}\n")


class _Collecting(torch_data.Dataset):
    """Each item collects garbage in the worker that makes it."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        gc.collect()
        return i


def test_loader_workers_never_finalize_the_parents_garbage(tmp_path):
    from workbench.runtime.common import forking_cleanly

    noted = tmp_path / "finalized"
    gc.disable()  # (so that the cycle is still garbage, not yet collected, when the workers fork)
    try:
        _Noted(noted)
        loader = torch_data.DataLoader(_Collecting(), batch_size=2, num_workers=1)
        assert [batch.tolist() for batch in forking_cleanly(loader)] == [[0, 1], [2, 3]]
    finally:
        gc.enable()
    assert noted.read_text().split() == [str(os.getpid())]  # here, before the worker forked; not in it
    assert gc.get_freeze_count() == 0
