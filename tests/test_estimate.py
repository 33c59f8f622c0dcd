"""chain.estimate, compare_backends, the advice and the plot: behaviour, never speed targets."""
from __future__ import annotations

import json
from dataclasses import asdict
import math
import statistics

import matplotlib
import numpy as np
import pytest
from PIL import Image

matplotlib.use("Agg")

import torch

import workbench as wb
from workbench.codegen import emit, load_module
from workbench.codegen.options import everything
from workbench.estimate import Comparison, Estimate, RateSpread, StageCost, StepCost, advise, reads_mixed_sizes
from workbench.estimate.files import MAX_FILES, first_batch, prepare_input

# Small and short: these tests check what an estimate contains, not how fast anything is.
FAST = dict(batch_size=4, image_size=48, runs=3, batches=1, warmup=1, progress=False)


def _chain(*steps, seed=3):
    return wb.Chain.from_dict({"seed": seed, "steps": list(steps)})


FLIP = {"op": "HorizontalFlip", "p": 0.5}
BRIGHT = {"op": "Brightness", "params": {"factor": [0.8, 1.2]}}
RESIZE = {"op": "Resize", "params": {"size": [32, 32]}}


@pytest.mark.parametrize("backend,workers", [("kornia", 0), ("kornia", 1), ("dali", 1), ("albumentations", 0),
                                            ("albumentations", 1)])
def test_estimate_reports_rate_stages_and_steps(backend, workers):
    chain = _chain(FLIP, {"op": "Rotate", "enabled": False}, BRIGHT, RESIZE)
    est = chain.estimate(backend=backend, device="cpu", workers=workers, **FAST)
    assert isinstance(est, Estimate)
    assert (est.backend, est.device, est.batch_size, est.image_size, est.workers) == (backend, "cpu", 4, (48, 48),
                                                                                       workers)
    assert len(est.run_rates) == 3 and all(r > 0 and math.isfinite(r) for r in est.run_rates)
    assert est.images_per_s == statistics.median(est.run_rates)
    assert est.spread.min <= est.images_per_s <= est.spread.max and est.spread.median == est.images_per_s
    # No GPU here: no host-to-device stage; each stage is consistent in both units.
    assert list(est.stages) == ["decode", "augment"]
    for stage in est.stages.values():
        assert stage.images_per_s == pytest.approx(4 / (stage.ms_per_batch / 1000), rel=1e-6)
        assert stage.detail
    # One row per enabled step, in chain order, with the sizes it sees.
    assert [(s.step, s.op) for s in est.steps] == [(1, "HorizontalFlip"), (3, "Brightness"), (4, "Resize")]
    assert [s.input_size for s in est.steps] == [(48, 48), (48, 48), (48, 48)]
    assert est.steps[-1].output_size == (32, 32)
    assert all(s.ms_per_batch >= 0 for s in est.steps)
    assert sum(s.share for s in est.steps) == pytest.approx(1.0)
    assert any("re-encoded as JPEG" in n and "48x48" in n for n in est.notes)
    assert est.machine["cpu_cores"] and est.machine["torch"]
    json.dumps(est.to_dict())  # plain data, ready for a file
    text = est.summary()
    assert f"{est.images_per_s:.1f} images/s" in text and "step 4 Resize" in text
    assert "| 3 | Brightness |" in est._repr_markdown_()


def test_a_step_added_in_front_gets_its_own_row_and_its_cost():
    """A heavy blur added in front of the same chain gets a row of its own in the breakdown, ahead of
    the flip's, and is its slowest step: the blur (31 taps, 256x256) costs tens of times a flip,
    measured back to back in one estimate. (Two estimates' totals are not compared: a busy machine
    once timed a lone flip's run slower than the blur's, in CI.)"""
    flip = {"op": "VerticalFlip", "p": 1.0}
    base = _chain(flip)
    heavier = _chain({"op": "GaussianBlur", "params": {"sigma": [8.0, 8.0], "kernel_size": 31}}, flip)
    options = dict(FAST, image_size=256, batch_size=8, workers=0)
    light, heavy = base.estimate(**options), heavier.estimate(**options)
    assert [s.op for s in light.steps] == ["VerticalFlip"]
    assert [s.op for s in heavy.steps] == ["GaussianBlur", "VerticalFlip"]
    assert [s.input_size for s in heavy.steps] == [(256, 256), (256, 256)]
    assert heavy.slowest_step.op == "GaussianBlur"
    # Decoding is the same data, so it stays a stage of its own in both.
    assert set(heavy.stages) == set(light.stages) == {"decode", "augment"}


def test_the_estimate_runs_the_code_export_writes(tmp_path, monkeypatch):
    """The whole-loader figure comes from the exported module's own bench_rates (what --bench
    prints; the export with every option, which the workbench loads), called with the estimate's
    settings (here in this process, to watch the call)."""
    from workbench.codegen import load_module

    chain = _chain(FLIP)
    module = load_module(chain.export("kornia", **asdict(everything("kornia"))), "kornia")
    calls = []
    original = module.bench_rates

    def spy(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, "bench_rates", spy)
    est = chain.estimate(workers=0, isolate=False, **FAST)
    assert len(calls) == 1
    root, batch_size, batches, warmup, runs, workers = calls[0][:6]
    assert (batch_size, batches, warmup, runs, workers) == (4, 1, 1, 3, 0)
    assert len(est.run_rates) == 3


@pytest.mark.parametrize("backend,workers", [("kornia", 0), ("dali", 1), ("albumentations", 0)])
def test_the_estimate_and_bench_call_the_same_timing_with_the_same_parameters(backend, workers, small_folder,
                                                                              monkeypatch, capsys):
    """The estimate's whole-loader figure and the exported script's --bench come from the one
    bench_rates of the exported module, which times with the one timed_rates: called with the
    same files, batch size, batches, warm-up, runs, workers and seed, they cannot drift apart."""
    from workbench.codegen import load_module

    chain = _chain(FLIP, BRIGHT)
    module = load_module(chain.export(backend, **asdict(everything(backend))), backend)
    bench_calls, timing_calls = [], []
    bench_rates, timed_rates = module.bench_rates, module.timed_rates

    def spy_bench(*args, **kwargs):
        bench_calls.append(args)
        return bench_rates(*args, **kwargs)

    def spy_timing(batches, count, batch_count, warmup=3, runs=1, sync=None, progress=None):
        timing_calls.append((batch_count, warmup, runs, sync))
        return timed_rates(batches, count, batch_count, warmup, runs, sync, progress)

    monkeypatch.setattr(module, "bench_rates", spy_bench)
    monkeypatch.setattr(module, "timed_rates", spy_timing)
    options = dict(batch_size=4, workers=workers, runs=3, batches=2, warmup=1)
    est = chain.estimate(backend=backend, images=small_folder, isolate=False, progress=False, **options)
    estimate_bench, estimate_timing = bench_calls[0], timing_calls[0]  # the whole loader comes first
    bench_calls.clear(), timing_calls.clear()
    module.main(["--images", str(small_folder), "--bench", "--batch-size", "4", "--workers", str(workers),
                 "--runs", "3", "--batches", "2", "--warmup", "1", "--device", "cpu"])
    assert len(bench_calls) == len(timing_calls) == 1
    assert estimate_bench[:8] == bench_calls[0][:8]  # root, batch, batches, warm-up, runs, workers, seed, device
    assert estimate_bench[0] == str(small_folder)  # the very files --bench reads
    assert estimate_timing == timing_calls[0] == (2, 1, 3, None)
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-1].startswith("images/s: ") and len(est.run_rates) == 3


def test_a_compiled_estimate_times_the_compiled_loader_and_reports_its_first_call(small_folder, monkeypatch):
    """torch_compile=True: the loader is timed as `--bench --compile` times it (bench_rates with
    torch_compile), the augmentation stage runs compiled, and the first compiled call's seconds
    are reported wherever the estimate is shown."""
    from workbench.codegen import load_module

    chain = _chain(FLIP, {"op": "Rotate"}, BRIGHT, {"op": "Normalize"})
    module = load_module(chain.export("kornia", **asdict(everything("kornia"))), "kornia")
    compiled_flags, bench_rates, augment_batch = [], module.bench_rates, module.augment_batch

    def spy_bench(*args, **kwargs):
        compiled_flags.append(("loader", kwargs.get("torch_compile")))
        return bench_rates(*args, **kwargs)

    def spy_augment(*args, **kwargs):
        compiled_flags.append(("augment", kwargs.get("torch_compile")))
        return augment_batch(*args, **kwargs)

    monkeypatch.setattr(module, "bench_rates", spy_bench)
    monkeypatch.setattr(module, "augment_batch", spy_augment)
    est = chain.estimate(images=small_folder, isolate=False, torch_compile=True, workers=0,
                         **dict(FAST, image_size=None))
    assert ("loader", True) in compiled_flags and ("augment", True) in compiled_flags
    assert ("augment", False) not in compiled_flags and ("augment", None) not in compiled_flags
    assert est.compile_seconds > 0 and est.label == "kornia on cpu, torch.compile"
    assert "torch.compile" in est.stages["augment"].detail
    line = f"first compiled call: {est.compile_seconds:.1f} s"
    assert line in est.summary() and line in est._repr_markdown_()
    assert est.to_dict()["compile_seconds"] == est.compile_seconds
    plain = chain.estimate(images=small_folder, workers=0, **dict(FAST, image_size=None))
    assert plain.compile_seconds is None and "compiled" not in plain.summary()


def test_torch_compile_is_a_kornia_estimate_option():
    with pytest.raises(wb.ChainError, match="torch_compile=True .* use backend='kornia'"):
        _chain(FLIP).estimate(backend="dali", torch_compile=True, **FAST)
    cmp = _chain(FLIP, {"op": "Rotate"}).compare_backends(["kornia", "albumentations"], torch_compile=True,
                                                         workers=0, **FAST)
    assert cmp.estimates["kornia"].compile_seconds > 0 and cmp.estimates["albumentations"].compile_seconds is None


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
def test_estimate_defaults_are_the_bench_defaults(backend, monkeypatch):
    """Left to their defaults, the estimate and --bench time the same warm-up, runs, batches per
    run and workers (the settings the estimate hands to its measuring process)."""
    import inspect

    from workbench.codegen import load_module
    from workbench.estimate import _settings, estimate
    from workbench.runtime.common import bench_batches

    chain = _chain(FLIP)
    module = load_module(chain.export(backend, **asdict(everything(backend))), backend)
    parsed = {}
    monkeypatch.setattr(module, "_bench", lambda args: parsed.update(vars(args)))
    module.main(["--images", "somewhere", "--bench", "--batch-size", "48"])
    defaults = {k: v.default for k, v in inspect.signature(estimate).parameters.items()}
    settings = _settings(chain, backend, "cpu", 48, defaults["workers"], defaults["runs"], defaults["batches"],
                         defaults["warmup"])
    assert (settings.runs, settings.warmup, settings.workers) == (parsed["runs"], parsed["warmup"], parsed["workers"])
    assert settings.batches == bench_batches(48, parsed["batches"])


def test_a_failure_in_the_measuring_process_is_reported(tmp_path, small_images):
    # Same-size files whose headers read fine but whose data is cut short: decoding fails in
    # the fresh process that measures, and the loader's one line (the file, what is wrong, the
    # fixes) comes back as an InputError.
    for i, image in enumerate(small_images[:4]):
        path = tmp_path / f"img_{i}.png"
        Image.fromarray(image).save(path)
        path.write_bytes(path.read_bytes()[:400])
    with pytest.raises(wb.InputError, match=r"img_\d\.png: (truncated|damaged) .*--skip-bad") as caught:
        _chain(FLIP).estimate(images=tmp_path, batch_size=2, workers=0, runs=1, batches=1, progress=False)
    assert "\n" not in str(caught.value)


def test_in_process_and_isolated_measurements_report_alike():
    chain = _chain(FLIP, RESIZE)
    inside, isolated = (chain.estimate(workers=0, isolate=flag, **FAST) for flag in (False, True))
    for est in (inside, isolated):
        assert [s.op for s in est.steps] == ["HorizontalFlip", "Resize"] and list(est.stages) == ["decode", "augment"]
        assert len(est.run_rates) == 3


def test_the_step_breakdown_times_the_first_crops_and_resizes_on_uint8_levels_as_the_cpu_runs_them(monkeypatch):
    # On a CPU the program runs the chain's first crops, flips and resizes on the images' uint8 levels
    # (its LEVEL_STEPS; a CenterCrop there cuts its window as a view, centre_crop_levels), and a ColorJitter
    # after them too (adjusted_levels, OpenCV); each step's row is timed on what the program gives it: levels,
    # then floats (the Rotate).
    chain = _chain({"op": "Resize", "params": {"size": [40, 40]}}, {"op": "CenterCrop", "params": {"size": [32, 32]}},
                   BRIGHT, {"op": "Rotate"})
    module = load_module(emit(chain, "kornia"), "kornia")
    seen = []
    for name in ("WbResize", "CenterCrop", "ColorJitter", "RandomRotation"):
        cls = getattr(module, name, None) or getattr(module.K, name)
        original = cls.apply_transform
        monkeypatch.setattr(cls, "apply_transform", lambda self, input, *a, _o=original, _n=name, **k:
                            seen.append((_n, input.dtype)) or _o(self, input, *a, **k))
    for name, label in (("adjusted_levels", "adjusted_levels"), ("centre_crop_levels", "CenterCrop")):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda batch, *a, _o=original, _l=label: seen.append((_l, batch.dtype))
                            or _o(batch, *a))
    est = chain.estimate(workers=0, isolate=False, **FAST)
    assert [s.op for s in est.steps] == ["Resize", "CenterCrop", "Brightness", "Rotate"]
    timed = set(seen)  # (the loader's and the augment stage's runs, and the rows')
    assert timed == {("WbResize", torch.uint8), ("CenterCrop", torch.uint8), ("adjusted_levels", torch.uint8),
                     ("RandomRotation", torch.float32)}, timed


def test_progress_reaches_one_and_never_goes_back():
    seen = []
    _chain(FLIP, BRIGHT).estimate(**dict(FAST, progress=lambda f, m: seen.append((f, m))), workers=0)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and 0 <= fractions[0] < 1
    assert {"whole loader", "decoding alone", "augmentation"} <= {m for _, m in seen}


def test_compare_backends_measures_each_backend_with_the_same_settings():
    cmp = _chain(FLIP, BRIGHT).compare_backends(workers=1, **FAST)
    assert isinstance(cmp, Comparison) and list(cmp.estimates) == ["kornia", "dali", "albumentations"]
    assert not cmp.skipped
    assert {(e.batch_size, e.image_size, e.workers) for e in cmp.estimates.values()} == {(4, (48, 48), 1)}
    assert cmp.fastest.images_per_s == max(e.images_per_s for e in cmp.estimates.values())
    assert cmp.ratio("dali", "kornia") == pytest.approx(
        cmp.estimates["dali"].images_per_s / cmp.estimates["kornia"].images_per_s)
    assert "kornia on cpu" in cmp.summary() and "| dali on cpu |" in cmp._repr_markdown_()
    with pytest.raises(wb.ChainError, match="unknown backend"):
        _chain(FLIP).compare_backends(["kornia", "opencv"], **FAST)


@pytest.mark.parametrize("kwargs,message", [
    ({"backend": "opencv"}, "unknown backend 'opencv'"),
    ({"batch_size": 0}, "batch_size must be an integer from 1 to 4096, got 0"),
    ({"batch_size": 2.5}, "batch_size must be an integer"),
    ({"batch_size": True}, "batch_size must be an integer"),
    ({"workers": -1}, "workers must be an integer from 0"),
    ({"runs": 0}, "runs must be an integer from 1"),
    ({"batches": 0}, "batches must be an integer from 1"),
    ({"image_size": 4}, r"image_size must be an int or \[height, width\] with sides 8..8192, got 4"),
    ({"image_size": "big"}, "image_size must be an int or"),
    ({"image_size": [32, 32, 3]}, "image_size must be an int or"),
    ({"image_size": [32.5, 32]}, "image_size must be an int or"),
    ({"device": "tpu"}, "device must be 'cpu', 'cuda'"),
])
def test_bad_arguments_are_named(kwargs, message):
    options = dict(FAST, **kwargs)
    with pytest.raises(wb.WorkbenchError, match=message):
        _chain(FLIP).estimate(**options)


def test_a_crop_larger_than_the_estimate_images_is_refused_before_measuring():
    chain = _chain({"op": "CenterCrop", "params": {"size": [64, 64]}})
    with pytest.raises(wb.InputError, match=r"step 1 \(CenterCrop\): size \[64, 64\] is larger than image 1"):
        chain.estimate(**FAST)


def test_an_invalid_chain_is_refused_with_its_own_message():
    chain = _chain(FLIP)
    chain.steps[0].p = 2.0
    with pytest.raises(wb.ChainError, match=r"step 1 \(HorizontalFlip\).*p"):
        chain.estimate(**FAST)


# ----- input files -----------------------------------------------------------------------
def test_a_folder_of_one_size_is_decoded_as_it_is(small_folder):
    inp = prepare_input(small_folder)
    assert inp.folder == small_folder and inp.size == (96, 128) and len(inp.files) == 6
    assert "as they are" in inp.notes[0]


def test_other_sizes_and_arrays_are_reencoded_once(small_folder, sample_images):
    resized = prepare_input(small_folder, (40, 50))
    assert resized.folder != small_folder
    assert {Image.open(f).size for f in resized.files} == {(50, 40)}
    assert all(f.suffix == ".jpg" for f in resized.files)
    assert prepare_input(small_folder, (40, 50)).folder == resized.folder  # same input -> same folder
    mixed = prepare_input(sample_images)  # the sample photos have several sizes
    heights, widths = zip(*(a.shape[:2] for a in sample_images))
    assert mixed.size == (int(np.median(heights)), int(np.median(widths)))
    assert any("median" in n for n in mixed.notes)
    many = prepare_input([sample_images[0]] * (MAX_FILES + 5), (16, 16))
    assert len(many.files) == MAX_FILES


@pytest.mark.parametrize("backend,workers", [("kornia", 0), ("dali", 1), ("albumentations", 0)])
def test_a_folder_of_mixed_sizes_is_measured_as_it_is_where_the_exported_loader_reads_it(backend, workers,
                                                                                         sample_images):
    """--bench --images FOLDER decodes FOLDER's own files (the sample photos: 8 sizes, JPEG and
    PNG); the estimate does too wherever the exported loader takes the folder as it is (here a
    step fixes the size first), instead of a re-encoded JPEG copy, every stage included."""
    from workbench.data import SAMPLE_DATA

    crop = _chain({"op": "RandomResizedCrop", "params": {"size": [32, 32]}}, FLIP)
    est = crop.estimate(backend=backend, images=SAMPLE_DATA, batch_size=4, runs=1, batches=1, warmup=1,
                        workers=workers, progress=False)
    assert "as they are" in est.notes[0] and "re-encoded" not in " ".join(est.notes)
    heights, widths = zip(*(a.shape[:2] for a in sample_images))
    assert est.image_size == (int(np.median(heights)), int(np.median(widths)))
    assert list(est.stages) == ["decode", "augment"] and [s.op for s in est.steps] == ["RandomResizedCrop",
                                                                                      "HorizontalFlip"]


def test_which_folders_are_read_as_they_are(sample_images):
    from workbench.data import SAMPLE_DATA

    crop = _chain({"op": "RandomResizedCrop", "params": {"size": [32, 32]}}, FLIP)
    inp = prepare_input(SAMPLE_DATA, mixed_sizes=True)
    assert inp.folder == SAMPLE_DATA and len(inp.files) == len(sample_images)
    assert sorted(inp.sizes) == sorted({a.shape[:2] for a in sample_images})
    assert first_batch(inp, 3).shape == (3, *inp.size, 3)  # the breakdowns' batch: one size
    # A chain whose loader needs one size (nothing fixes it) measures re-encoded files, as before;
    # Albumentations reads any folder as it is (image by image).
    assert prepare_input(SAMPLE_DATA, mixed_sizes=False).folder != SAMPLE_DATA
    assert reads_mixed_sizes(_chain(FLIP), "albumentations")
    assert not reads_mixed_sizes(_chain(FLIP), "kornia")
    assert reads_mixed_sizes(crop, "kornia") and reads_mixed_sizes(crop, "dali")
    # A size asked for is still a re-encoded copy at that size.
    assert prepare_input(SAMPLE_DATA, (40, 40), mixed_sizes=True).size == (40, 40)


# ----- spread ------------------------------------------------------------------------------
@pytest.mark.parametrize("rates", [[100.0], [120.0, 80.0], [90.0, 100.0, 80.0, 110.0, 100.0],
                                   [5.0, 400.0, 7.5, 6.0, 300.0, 6.5, 1e4]])
def test_the_spread_is_ordered_and_centred_on_the_estimate(rates):
    spread = RateSpread.of(rates)
    assert spread.min <= spread.q1 <= spread.median <= spread.q3 <= spread.max
    assert (spread.min, spread.max, spread.runs) == (min(rates), max(rates), len(rates))
    assert spread.median == statistics.median(rates)
    assert spread.iqr == spread.q3 - spread.q1 >= 0
    assert spread.relative_range == pytest.approx((max(rates) - min(rates)) / statistics.median(rates))
    est = Estimate("kornia", "cpu", 8, (64, 64), 1, statistics.median(rates), list(rates), {}, [])
    assert est.spread == spread and est.spread.median == est.images_per_s


def test_the_spread_is_in_the_result_and_everywhere_it_is_shown():
    from workbench.ui.estimate_panel import _report_html

    est = _synthetic(100.0, 400.0, 300.0)
    est.run_rates = [80.0, 95.0, 100.0, 104.0, 130.0]
    shown = est.spread.describe()
    assert shown == ("median of 5 runs; min 80.0, IQR 95.0-104.0, max 130.0 images/s (range 50% of the median)")
    assert shown in est.summary() and shown in est._repr_markdown_() and shown in str(est)
    assert shown in _report_html(est, est.advise())  # the app's estimate panel
    data = est.to_dict()
    assert data["spread"] == {"min": 80.0, "q1": 95.0, "median": 100.0, "q3": 104.0, "max": 130.0, "runs": 5}
    json.dumps(data)
    cmp = Comparison({"kornia": est})
    assert shown in cmp.summary() and "| 80.0-130.0 |" in cmp._repr_markdown_()
    assert "runs 80-130" in est.plot().axes[0].get_legend().get_texts()[0].get_text()


# ----- advice -------------------------------------------------------------------------------
def _synthetic(rate, decode, augment, steps=(), backend="kornia", workers=1, size=(256, 256)):
    stages = {"decode": StageCost("decode", decode, 64000 / decode, "PIL"),
              "augment": StageCost("augment", augment, 64000 / augment, "Kornia")}
    return Estimate(backend, "cpu", 64, size, workers, rate, [rate], stages, list(steps))


def test_advice_when_decoding_limits(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    advice = advise(_synthetic(150.0, 160.0, 900.0), target=300)
    assert advice.keeps_up is False and advice.limiting_stage == "decode"
    assert "Too slow: 150 images/s against the 300 needed (50% short" in advice.verdict
    assert "The limit is decode: 160 images/s" in advice.verdict
    assert any("workers=8" in s for s in advice.suggestions)
    assert any("resized close to the training size" in s for s in advice.suggestions)


def test_advice_when_augmentation_limits_names_the_step_and_a_cheaper_order():
    steps = [StepCost(1, "GaussianBlur", 80.0, 0.8, (512, 512), (512, 512)),
             StepCost(2, "RandomResizedCrop", 20.0, 0.2, (512, 512), (224, 224))]
    advice = _synthetic(90.0, 2000.0, 100.0, steps).advise(target=400)
    assert advice.limiting_stage == "augment" and advice.limiting_step.op == "GaussianBlur"
    text = str(advice)
    assert "Step 1 (GaussianBlur) takes 80% of the augmentation" in text
    assert "kernel_size" in text  # the op's own cost hint, from its spec
    assert "Move GaussianBlur after step 2 (RandomResizedCrop)" in text and "5.2x fewer pixels" in text


def test_advice_keeps_up_and_points_to_a_faster_backend():
    slow, fast = _synthetic(100.0, 500.0, 120.0), _synthetic(300.0, 900.0, 400.0, backend="dali")
    assert advise(slow, target=80).keeps_up is True
    assert advise(slow, target=80).suggestions[0] == "Nothing needs to change."
    assert advise(slow).keeps_up is None
    cmp = Comparison({"kornia": slow, "dali": fast})
    assert "Switch backend: dali on cpu delivers 300 images/s (3.00x)" in str(slow.advise(200, cmp))
    assert cmp.advise(200).keeps_up is True  # the fastest backend's verdict


def test_advice_mentions_cores_shared_between_stages():
    advice = advise(_synthetic(100.0, 400.0, 300.0), target=250)
    assert any("share this machine's" in s for s in advice.suggestions)


def test_advice_on_a_chain_with_groups_names_the_group_step():
    # A group is a step of its own kind, not an op: the advice read every step's op spec and failed
    # with "unknown op 'SomeOf'" after the whole measurement (the app then showed nothing).
    chain = (wb.Chain(seed=3).add("Resize", size=[32, 32])
             .add("SomeOf", n=1, steps=[wb.Step.create("Rotate"), wb.Step.create("GaussianBlur")])
             .add("CenterCrop", size=[16, 16]))
    est = chain.estimate(batch_size=4, image_size=32, workers=0, runs=1, batches=1, progress=False)
    assert [s.op for s in est.steps] == ["Resize", "SomeOf", "CenterCrop"]
    steps = [StepCost(1, "SomeOf", 80.0, 0.8, (64, 64), (64, 64)), StepCost(2, "CenterCrop", 20.0, 0.2, (64, 64),
                                                                           (16, 16))]
    text = str(_synthetic(90.0, 2000.0, 100.0, steps).advise(target=400))
    assert "Step 1 (SomeOf) takes 80% of the augmentation" in text and "Move SomeOf after step 2" in text
    assert isinstance(str(est.advise(target=1e6)), str) and est.advise().verdict.startswith("Delivers")


def test_noisy_measurements_get_a_measure_again_not_a_bottleneck():
    # The whole loop includes augmentation, so it cannot run faster than augmentation alone: the
    # machine was busy. Advising "the limit is augment" from such figures contradicts itself.
    est = _synthetic(46.0, 400.0, 22.0)
    est.run_rates = [30.0, 46.0, 49.0]
    advice = est.advise(target=100)
    assert advice.noisy and "too noisy" in advice.verdict and "ran faster than augment alone" in advice.verdict
    assert "limit is" not in advice.verdict and advice.suggestions[0].startswith("Measure again")
    wide = _synthetic(100.0, 400.0, 300.0)
    wide.run_rates = [40.0, 100.0, 120.0]  # spread 80% of the median
    assert "the runs spread 80% of the median" in wide.advise().verdict
    steady = _synthetic(100.0, 400.0, 300.0)
    steady.run_rates = [90.0, 100.0, 110.0]
    assert not steady.advise().noisy and "The limit is augment: 300 images/s" in steady.advise().verdict
    # Albumentations augments in every worker at once: 4 workers x 30 images/s alone is no contradiction.
    assert not _synthetic(100.0, 400.0, 30.0, backend="albumentations", workers=4).advise().noisy


def test_noisy_measurements_still_answer_a_target_the_whole_spread_misses_or_clears():
    # Noise hides the bottleneck, not a target every run fell short of (a 2-run estimate on a busy
    # CI machine once lost "Too slow" against a target of 1e9 images/s this way).
    est = _synthetic(100.0, 400.0, 300.0)
    est.run_rates = [40.0, 100.0, 120.0]
    short = est.advise(target=1e9)
    assert short.noisy and short.keeps_up is False and short.verdict.startswith("Too slow: 100 images/s")
    assert "even the fastest run (120) fell short" in short.verdict and "limit is" not in short.verdict
    clear = est.advise(target=40)
    assert clear.keeps_up is True and "so did the slowest run (40)" in clear.verdict
    between = est.advise(target=110)
    assert between.keeps_up is None and "too noisy to tell against the 110 needed" in between.verdict
    assert est.advise().keeps_up is None and est.advise().verdict.startswith("Delivers about 100 images/s")


@pytest.mark.parametrize("target", [0, -5, "fast", True])
def test_advice_refuses_a_bad_target(target):
    with pytest.raises(wb.WorkbenchError, match="target must be a positive number"):
        advise(_synthetic(100.0, 400.0, 300.0), target=target)


# ----- plots --------------------------------------------------------------------------------
def test_plot_shows_stages_steps_and_lines():
    steps = [StepCost(1, "Rotate", 12.0, 0.75, (64, 64), (64, 64)), StepCost(2, "Normalize", 4.0, 0.25)]
    fig = _synthetic(150.0, 160.0, 900.0, steps).plot(target=300)
    stage_ax, step_ax = fig.axes
    assert [t.get_text() for t in stage_ax.get_yticklabels()] == ["decode", "augment"]
    assert [round(p.get_width(), 6) for p in stage_ax.patches] == [160.0, 900.0]
    assert sorted(line.get_xdata()[0] for line in stage_ax.lines) == [150.0, 300.0]  # whole loader, target
    assert [t.get_text() for t in step_ax.get_yticklabels()] == ["1. Rotate", "2. Normalize"]
    assert [p.get_width() for p in step_ax.patches] == [12.0, 4.0]
    # The limiting stage stands out.
    assert stage_ax.patches[0].get_facecolor() != stage_ax.patches[1].get_facecolor()


def test_comparison_plot_has_an_overview_and_a_row_per_backend():
    cmp = Comparison({"kornia": _synthetic(100.0, 500.0, 120.0),
                      "dali": _synthetic(300.0, 900.0, 400.0, backend="dali")})
    fig = cmp.plot(target=200)
    overview = fig.axes[0]
    assert [p.get_width() for p in overview.patches] == [100.0, 300.0]
    assert len(fig.axes) == 6


def test_timed_rates_counts_every_batch_and_reports_progress():
    from workbench.runtime.common import timed_rates

    seen = []
    rates = timed_rates(iter([[0] * 4] * 10), len, batch_count=3, warmup=1, runs=3,
                        progress=lambda done, total: seen.append((done, total)))
    assert len(rates) == 3 and all(r > 0 for r in rates)
    assert seen == [(k, 10) for k in range(1, 11)]
    with pytest.raises(RuntimeError, match="the loader ran out after 5 of the 10 batches to time"):
        timed_rates(iter([[0]] * 5), len, batch_count=3, warmup=1, runs=3)
