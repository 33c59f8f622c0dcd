"""The one-command GPU check (bench/gpu_check.py): on a machine without a GPU it runs to the end and
says what it skipped; its rehearsal runs a real benchmark and reports its figures; every test that
needs CUDA is selected by the marker the check runs."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import torch

from conftest import ENV, ROOT

sys.path.insert(0, str(ROOT / "bench"))
from gpu_check import BENCHES, PARTS, Target, judge, progress, read_junit  # noqa: E402

no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="checks what the GPU check does without a GPU")


def check(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, str]:
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--out", str(out), *args],
                          capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=600)
    report = (out / "report.md").read_text(encoding="utf-8") if (out / "report.md").exists() else ""
    return done, report


def summary_rows(report: str) -> dict[str, list[str]]:
    """The Summary table's rows: part -> [status, seconds, detail]."""
    section = report.split("## Summary", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines() if line.startswith("| ")]
    return {row[0]: row[1:] for row in rows[1:]}


@no_gpu
def test_without_a_gpu_it_runs_to_the_end_and_names_every_skipped_part(tmp_path):
    done, report = check(tmp_path, "--test-files", "tests/test_cuda.py")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = summary_rows(report)
    assert list(rows) == list(PARTS)
    # The tests part really ran pytest on the marked tests (twenty-one there, four parametrized), all skipped.
    assert rows["tests"][0] == "skipped" and rows["tests"][2].startswith("0 passed, 0 failed, 0 errors, 29 skipped")
    assert "torch sees no GPU" in rows["tests"][2]
    for bench in BENCHES:
        assert rows[bench.name][0] == "skipped" and "torch sees no GPU" in rows[bench.name][2], bench.name
    assert "| torch |" in report.replace(" torch |", "| torch |") and torch.__version__ in report
    for bench in BENCHES:  # every target is listed, unmeasured
        for target in bench.targets:
            assert f"| {bench.name} | {target.figure} | skipped | {target} | - |" in report


def test_rehearsal_runs_a_real_benchmark_and_reports_its_figures(tmp_path):
    done, report = check(tmp_path, "--rehearse", "--parts", "preview_kornia")
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads((tmp_path / "out" / "figures" / "preview_kornia.json").read_text())
    assert set(figures) == {"median_ms", "min_ms", "max_ms"} and 0 < figures["min_ms"] <= figures["median_ms"]
    row = re.search(r"\| preview_kornia \| median_ms \| ([0-9.e+]+) \| <= 30 \| not judged \|", report)
    assert row and float(row.group(1)) == pytest.approx(figures["median_ms"], rel=1e-3)
    log = (tmp_path / "out" / "logs" / "preview_kornia.log").read_text()
    assert "median control-change-to-new-images" in log


def test_the_machines_own_speed_is_measured_first(tmp_path):
    assert BENCHES[0].name == "reference" and not BENCHES[0].targets  # context for the figures, not a target
    done, report = check(tmp_path, "--rehearse", "--parts", "reference")
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads((tmp_path / "out" / "figures" / "reference.json").read_text())
    assert set(figures) == {"copy_gb_per_s", "matmul_tflops"} and min(figures.values()) > 0
    assert re.search(r"\| reference \| copy_gb_per_s \| [0-9.e+]+ \|", report)


def test_a_part_that_no_longer_fits_the_budget_is_not_run_and_says_how_to_run_it(tmp_path):
    done, report = check(tmp_path, "--rehearse", "--parts", "run_16,estimate", "--budget", "1")
    assert done.returncode == 0
    rows = summary_rows(report)
    assert rows["run_16"][0] == "not run" and "--parts run_16" in rows["run_16"][2]
    assert rows["estimate"][0] == "not run"


def test_unknown_parts_are_refused_with_the_list(tmp_path):
    done, _ = check(tmp_path, "--parts", "loaders,lodaers")
    assert done.returncode == 2 and "unknown part(s) lodaers" in done.stderr and "preview_kornia" in done.stderr


@pytest.mark.parametrize("figures, status", [
    ({"ratio": 0.96}, "passed"), ({"ratio": 0.94}, "missed target"), ({"other": 1.0}, "failed")])
def test_judge_sets_each_figure_against_its_target(figures, status):
    assert judge(figures, (Target("ratio", ">=", 0.95),), rehearse=False)[0] == status


def test_targets_bound_each_way():
    assert Target("median_ms", "<=", 30).met(30) and not Target("median_ms", "<=", 30).met(30.5)
    error = Target("kornia_error", "|<=|", 0.10)
    assert error.met(-0.09) and not error.met(-0.11) and not error.met(0.11)
    assert judge({"e": -0.2}, (Target("e", "|<=|", 0.1),), rehearse=False) == ("missed target",
                                                                                 "e -0.2, want |x| <= 0.1")


def test_junit_counts_and_failures(tmp_path):
    xml = tmp_path / "t.xml"
    xml.write_text('<testsuites><testsuite><testcase classname="a" name="ok" time="2.5"/>'
                   '<testcase classname="a" name="bad" time="1"><failure message="assert 1 == 2&#10;more"/></testcase>'
                   '<testcase classname="a" name="off"><skipped message="needs a CUDA GPU"/></testcase>'
                   '<testcase classname="b" name="boom"><error message="fixture"/></testcase></testsuite></testsuites>')
    counts, failures, slowest = read_junit(xml)
    assert counts == {"passed": 1, "failed": 1, "errors": 1, "skipped": 1}
    assert failures == [("a::bad", "assert 1 == 2"), ("b::boom", "fixture")] and slowest == [("a::ok", 2.5)]


def test_a_cut_off_test_run_still_says_how_far_it_got(tmp_path):
    # The H100 run of 2026-11-26: killed at the cap before pytest wrote its summary or JUnit XML.
    log = tmp_path / "tests.log"
    log.write_text("bringing up nodes...\n\n" + "." * 72 + " [ 47%]\n" + "." * 49 + "F.F" + "." * 20
                   + " [ 94%]\n.....F.\n[gpu_check] killed after 200 s\n", encoding="utf-8")
    assert progress(log) == "151 tests ran: 3 failed, 0 errors"


def test_every_test_that_needs_cuda_carries_the_marker_the_check_selects():
    # A test that skips itself on torch.cuda.is_available() would never be run by the GPU check.
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"skipif\(\s*not\b.{0,60}?cuda\.is_available", text, re.S), path.name
