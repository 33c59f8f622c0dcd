"""A program carries only what it uses (codegen/options.py): the export options (targets, shards,
gpu_decode) add their code, and only theirs; a program made without one says in one line how to
export it when asked for the feature; the code a chain never runs stays out, and a program made
without any of it saves what the program with everything (the workbench's own module) saves."""
import dataclasses
import subprocess
import sys

import numpy as np
import pytest

import workbench as wb
from workbench.cli import main as cli_main
from workbench.codegen.options import everything
from workbench.errors import ExportError

from conftest import ENV, _loaded_from, annotated_folder

BACKENDS = ("kornia", "dali", "albumentations")
# Definitions each option's code has and a program without the option lacks.
MARKS = {"targets": ("def annotated_folder(", "def move_batch("), "shards": ("def shard_paths(", "def index_shards("),
         "gpu_decode": ("def nvimgcodec_jpeg_decoder(", "def decode_batch(")}


def _flip():
    return wb.Chain(seed=2).add("HorizontalFlip")


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_option_adds_its_code_and_only_its_code(backend):
    plain = _flip().export(backend)
    assert not any(mark in plain for marks in MARKS.values() for mark in marks)
    options = [f.name for f in dataclasses.fields(everything(backend)) if getattr(everything(backend), f.name)]
    assert options == {"kornia": ["targets", "shards", "gpu_decode"], "dali": ["targets", "shards"],
                       "albumentations": ["targets"]}[backend]
    for option in options:
        alone = _flip().export(backend, **{option: True})
        assert all(mark in alone for mark in MARKS[option]) and len(alone.splitlines()) > len(plain.splitlines())
        assert not any(mark in alone for other, marks in MARKS.items() if other != option for mark in marks), option
        assert f"#   {option}: " not in alone and f"#   {option}: " in plain  # the section lists what is left out


def test_a_one_step_program_is_a_fraction_of_the_whole_program():
    # Line counts of a one-step chain's program (the measure), without and with every option.
    # Before the options (4682c25) every program was the whole one: 3,259 / 2,056 / 1,546 lines.
    sizes = {backend: (len(_flip().export(backend).splitlines()),
                       len(_flip().export(backend, **dataclasses.asdict(everything(backend))).splitlines()))
             for backend in BACKENDS}
    # (Measured at this change: 1,431 / 857 / 735; Kornia 1,471 with issue 30's uint8 levels; 1,806 / 1,318 /
    # 1,057 with issue 32's unreadable files, exclusion lists and resuming, which every loader has; 2,053 /
    # 1,534 / 1,299 with issue 33's file tables, index files and prefetch bound, 2,094 / 1,559 / 1,345 with the
    # workers' fork made safe (forking_cleanly, opencv_alone) and DALI's bound by prefetch_plan; Kornia 2,186 with
    # issue 30's kept memory (keep_freed_memory) and its OpenCV levels (the blurs' and greys', which every chain
    # that runs steps in chunks reaches; the fused runs' are left out); Kornia 2,237 with issue 30's stretches that
    # stay on levels run whole (stays_on_levels), rows copied back one sample at a time (copy_rows) and levels laid
    # out by cv2.merge (channels_last_levels); 2,279 with the levels a chain ends on converted by float tables
    # (float_tables_levels, into numpy's memory), which every chain reaches; 2,308 with issue 30's flips of some
    # samples on levels (flips_levels, which a flip's chain needs; the levels' resized crops, a ChainFeature, left
    # out); 2,440 with issue 30's levels shared out to the cores (threads.py: sample_threads, each_sample,
    # shared_parts, which every stretch on levels reaches, a flip's too); 2,525 with issue 30's draws without
    # Kornia's generic steps (draws.py's step_draws, which every step's draws go through; RandomResizedCrop's in
    # numpy, a ChainFeature, left out) and flips in place; 2,552 with issue 30's gates of same_on_batch steps, a
    # first shrinking Resize stacked a part a core (its call and `stacked`; its code and CenterCrop's corners and
    # window, ChainFeatures, left out) and windows of levels looked up where they lie; the target is 600.)
    ceilings = {"kornia": 2552, "dali": 1560, "albumentations": 1345}
    for backend, (plain, whole) in sizes.items():
        assert plain <= ceilings[backend] and whole > plain + 700, (backend, plain, whole)


def test_a_program_without_an_option_says_how_to_export_it_in_one_line(tmp_path, small_folder):
    # The command line as a user meets it: one line on stderr, no traceback, exit status 1.
    script = tmp_path / "flip.py"
    _flip().export("kornia", path=script)
    (tmp_path / "annotated").mkdir()
    folder, coco, masks = annotated_folder(tmp_path / "annotated", [(40, 48)] * 2)
    proc = subprocess.run([sys.executable, str(script), "--images", str(folder), "--coco", str(coco), "--save",
                           str(tmp_path / "o.npz")], capture_output=True, text=True, env=ENV, timeout=240)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        "masks, boxes and keypoints (--coco, --masks): this script was exported without them. Export the chain "
        "again with targets=True: chain.export(..., targets=True), `workbench export ... --targets`, or the "
        '"targets" box of the app\'s export panel.']
    assert not (tmp_path / "o.npz").exists()


@pytest.mark.parametrize("backend,argv,option", [
    ("kornia", ["--shards", "train-{0000..0001}.tar", "--epochs", "1"], "shards=True"),
    ("kornia", ["--decoder", "nvimgcodec", "--epochs", "1"], "gpu_decode=True"),
    ("kornia", ["--masks", "masks", "--epochs", "1"], "targets=True"),
    ("dali", ["--shards", "train-{0000..0001}.tar", "--save", "o.npz"], "shards=True"),
    ("dali", ["--coco", "c.json", "--bench"], "targets=True"),
    ("albumentations", ["--coco", "c.json", "--epochs", "1"], "targets=True"),
])
def test_each_left_out_feature_stops_before_any_work_with_its_option_named(backend, argv, option, tmp_path,
                                                                          small_folder):
    module = _loaded_from(_export(backend, tmp_path))
    if "--shards" not in argv:
        argv = ["--images", str(small_folder), *argv]
    with pytest.raises(SystemExit, match=f"exported without them. Export the chain again with {option}"):
        module.main(argv)


def _export(backend, folder):
    script = folder / f"flip_{backend}.py"
    _flip().export(backend, path=script)
    return script


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_step_that_reads_boxes_turns_targets_on(backend):
    chain = wb.Chain().add("RandomIoUCrop")
    if chain.unsupported_ops(backend):
        pytest.skip(f"RandomIoUCrop does not run on {backend}")
    assert "def augment_targets(" in chain.export(backend) and "def augment_targets(" not in _flip().export(backend)


def test_options_are_checked_with_what_to_do():
    with pytest.raises(ExportError, match="gpu_decode=True: the dali export decodes on the GPU whenever it runs"):
        _flip().export("dali", gpu_decode=True)
    with pytest.raises(ExportError, match="shards=True: the albumentations export reads a folder of images only"):
        _flip().export("albumentations", shards=True)
    with pytest.raises(ExportError, match="targets must be True or False, got 'yes'"):
        _flip().export("kornia", targets="yes")
    with pytest.raises(ExportError, match="targets: options of the program form; a snippet is the chain alone"):
        _flip().export("kornia", form="snippet", targets=True)


def test_the_command_line_takes_the_options(tmp_path, capsys):
    chain_file = tmp_path / "chain.yaml"
    _flip().save(chain_file)
    out = tmp_path / "aug.py"
    argv = ["export", str(chain_file), "--backend", "kornia", "--targets", "--gpu-decode", "-o", str(out)]
    assert cli_main(argv) == 0
    assert out.read_text() == _flip().export("kornia", targets=True, gpu_decode=True)
    assert f"(kornia program, {out.read_text().count(chr(10)):,} lines, with targets, gpu_decode)" in \
        capsys.readouterr().out
    iou = tmp_path / "iou.yaml"
    wb.Chain().add("RandomIoUCrop").save(iou)
    assert cli_main(["export", str(iou), "--backend", "dali", "-o", str(tmp_path / "iou.py")]) == 0
    assert "lines, with targets); run it" in capsys.readouterr().out  # turned on by the step that reads boxes
    assert cli_main(["export", str(chain_file), "--backend", "dali", "-o", str(tmp_path / "flip.py")]) == 0
    assert "lines, no export options); run it" in capsys.readouterr().out
    assert MARKS["targets"][0] in out.read_text() and MARKS["shards"][0] not in out.read_text()


# Chains that reach each piece of code a program leaves out when its chain never runs it (fused
# colour alone, fused warps, the batched first crop, batch mixing, groups, Kornia's policies), and
# chains that reach none of it.
CHAINS = {
    "flip": lambda: wb.Chain(seed=3).add("HorizontalFlip", p=0.5),
    "jitter_alone": lambda: wb.Chain(seed=3).add("ColorJitter", p=1.0, hue=[-0.2, 0.2]),
    "normalize_alone": lambda: wb.Chain(seed=3).add("Normalize"),
    "warps": lambda: wb.Chain(seed=3).add("Rotate", p=1.0).add("Affine", p=1.0),
    "first_crop": lambda: wb.Chain(seed=3).add("RandomResizedCrop", size=[24, 24]).add("Invert"),
    "mixing": lambda: wb.Chain(seed=3).add("Resize", size=[24, 24]).add("MixUp", p=1.0),
    "group": lambda: wb.Chain(seed=3).add("OneOf", steps=[wb.Step.create("Rotate", p=1.0),
                                                          wb.Step.create("Solarize", p=1.0)]),
    "policy": lambda: wb.Chain(seed=3).add("RandAugment"),
    "blur_alone": lambda: wb.Chain(seed=3).add("GaussianBlur", p=1.0),
}


@pytest.mark.parametrize("backend", ["kornia", "albumentations"])
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_a_program_without_the_code_its_chain_never_runs_saves_what_the_whole_program_saves(name, backend, tmp_path,
                                                                                              small_folder):
    chain = CHAINS[name]()
    if chain.unsupported_ops(backend):
        pytest.skip(f"{name} does not run on {backend}")
    saved = {}
    for label, options in (("plain", {}), ("whole", dataclasses.asdict(everything(backend)))):
        script = tmp_path / f"{label}.py"
        chain.export(backend, path=script, **options)
        module = _loaded_from(script)
        module.main(["--images", str(small_folder), "--seed", "7", "--save", str(tmp_path / f"{label}.npz")])
        with np.load(tmp_path / f"{label}.npz") as data:
            saved[label] = {key: data[key] for key in data.files}
    assert sorted(saved["plain"]) == sorted(saved["whole"])
    for key, value in saved["whole"].items():
        assert np.array_equal(saved["plain"][key], value, equal_nan=value.dtype.kind == "f"), key
