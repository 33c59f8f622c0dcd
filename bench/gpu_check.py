"""The GPU check: one command that runs every CUDA test and every GPU benchmark (quick forms) and
writes a report with each figure beside its target.

On this project's lent GPU machine (see ../shared/gpu/README.md for installing DALI, Kornia and
Albumentations there, and `bench/gpu_extra_wheels.sh` for ipywidgets, matplotlib and pytest
plug-ins), after the parts: one `run` with `carry: [".gpu/extra"]` and the command

    bash bench/gpu_check.sh          # sets the paths, runs this, packs OUT into two files

Elsewhere: `python3 bench/gpu_check.py --out DIR`. Seen on an H100 (2026-11-26): the machine
started in about 30 s and the six parts took about 35 s, so a 400 s check fits a 15-minute lease
with time to rerun one part.

Parts, in order: the machine (device, driver, versions), the CUDA tests (every test marked
`cuda` or `gpu_aware`, -x off, with --durations), then the benchmarks, most important first.
The whole check keeps to `--budget` seconds (default 400: under 7 minutes with start-up): each
part has a time cap, and a part that no longer fits is reported as not run, with the command
that runs it alone (`--parts NAME`). The report (OUT/report.md) is rewritten after every part,
so a check cut off still leaves one; logs go to OUT/logs/, figures to OUT/figures/*.json.

Without a GPU it runs to the end, says which parts it skipped and why, and exits 0.
`--rehearse` runs every benchmark on the CPU at small sizes instead (the same scripts, the same
figures and report; the targets are a GPU's and are not judged), to catch a broken benchmark
before GPU minutes are spent on it.

Exit status: 0 when every part that ran passed and met its targets, 1 otherwise.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TEST_FILES = ["tests"]  # every test marked cuda or gpu_aware, wherever it lives
DEFAULT_BUDGET_S = 400
TESTS_CAP_S = 240
JPEG_FILES = 2048
REHEARSAL_SLOWER = 4  # a rehearsal's caps: the CPU runs the small forms slower than a GPU the quick ones


@dataclass(frozen=True)
class Target:
    """A bound on one figure of a benchmark's JSON, e.g. Target("ratio", ">=", 0.95)."""

    figure: str
    relation: str  # ">=", "<=", or "|<=|" (the absolute value at most)
    bound: float

    def met(self, value: float) -> bool:
        if self.relation == ">=":
            return value >= self.bound
        if self.relation == "<=":
            return value <= self.bound
        return abs(value) <= self.bound

    def __str__(self) -> str:
        return f"|x| <= {self.bound:g}" if self.relation == "|<=|" else f"{self.relation} {self.bound:g}"


@dataclass(frozen=True)
class Bench:
    """One benchmark run: its script's arguments on a GPU and in a CPU rehearsal (`{jpegs}` stands
    for the shared JPEG folder), its time cap, and the targets its figures are judged by."""

    name: str
    title: str
    gpu_args: tuple[str, ...]
    rehearse_args: tuple[str, ...]
    cap_s: int
    targets: tuple[Target, ...] = ()
    needs: tuple[str, ...] = ()  # modules it imports (a missing one skips it, named)

    def argv(self, rehearse: bool, jpegs: Path, figures: Path) -> list[str]:
        args = self.rehearse_args if rehearse else self.gpu_args
        return [a.replace("{jpegs}", str(jpegs)) for a in args] + ["--json", str(figures)]


# Most important first: when the budget runs out, what is left is what matters least. The machine's
# own speed first (seconds): the other figures read against it.
BENCHES = (
    Bench("reference", "The machine's own speed: a 1 GiB device-to-device copy and an 8192^2 bf16 matrix product",
          ("device_reference.py", "--device", "cuda"),
          ("device_reference.py", "--device", "cpu", "--mib", "64", "--matrix", "512", "--runs", "3"),
          30),
    Bench("loaders", "Exported Kornia and DALI training loaders, ImageNet chain, batch 256, 500x375 JPEGs "
          "(Kornia decodes on the GPU)",
          ("loaders_imagenet.py", "--batch", "256", "--images", "{jpegs}", "--workers", "8", "--device", "cuda",
           "--repeats", "1"),
          ("loaders_imagenet.py", "--batch", "16", "--images", "{jpegs}", "--workers", "2", "--device", "cpu",
           "--repeats", "1"),
          90, (Target("kornia", ">=", 10_000), Target("kornia_over_dali", ">=", 0.5)), ("nvidia.dali", "kornia")),
    Bench("dali_vs_expert", "Exported DALI pipeline vs an expert's (fn.decoders.image_random_crop), GPU, batch 256",
          ("dali_export_vs_handwritten.py", "--device", "gpu", "--batch", "256", "--threads", "8", "--blocks", "3",
           "--block", "10", "--images", "{jpegs}"),
          ("dali_export_vs_handwritten.py", "--device", "cpu", "--batch", "16", "--threads", "2", "--blocks", "2",
           "--block", "3", "--warmup", "2", "--images", "{jpegs}"),
          60, (Target("ratio", ">=", 1.0),), ("nvidia.dali",)),
    Bench("tensor_resident", "Tensor-resident example chain, fused (eager and compiled) vs AugmentationSequential, "
          "batch 256, 256^2 uint8 -> 224^2 float",
          ("tensor_resident.py", "--batch", "256", "--runs", "5", "--device", "cuda", "--compile"),
          ("tensor_resident.py", "--batch", "16", "--runs", "2", "--warmup", "1", "--device", "cpu", "--compile"),
          90, (Target("fused", ">=", 50_000), Target("fused_over_sequential", ">=", 10),
               Target("compiled_over_sequential", ">=", 10)), ("kornia",)),
    Bench("run_16", "chain.run(device='cuda') vs hand-written Kornia, batch 16",
          ("kornia_run_vs_handwritten.py", "--batch", "16", "--runs", "5", "--device", "cuda"),
          ("kornia_run_vs_handwritten.py", "--batch", "8", "--runs", "2", "--warmup", "1", "--device", "cpu"),
          40, (Target("ratio", ">=", 0.95),), ("kornia",)),
    Bench("run_256", "chain.run(device='cuda') vs hand-written Kornia, batch 256",
          ("kornia_run_vs_handwritten.py", "--batch", "256", "--runs", "5", "--device", "cuda"),
          ("kornia_run_vs_handwritten.py", "--batch", "16", "--runs", "2", "--warmup", "1", "--device", "cpu"),
          40, (Target("ratio", ">=", 0.95),), ("kornia",)),
    Bench("preview_kornia", "Preview latency in the app (Python side), Kornia on the GPU, 16 images 256^2, 6 steps",
          ("preview_latency.py", "--backend", "kornia", "--device", "cuda", "--runs", "7"),
          ("preview_latency.py", "--backend", "kornia", "--device", "cpu", "--runs", "2"),
          40, (Target("median_ms", "<=", 30),), ("kornia", "ipywidgets")),
    Bench("preview_dali", "Preview latency in the app (Python side), DALI on the GPU",
          ("preview_latency.py", "--backend", "dali", "--device", "cuda", "--runs", "7"),
          ("preview_latency.py", "--backend", "dali", "--device", "cpu", "--runs", "2"),
          40, (Target("median_ms", "<=", 30),), ("nvidia.dali", "ipywidgets")),
    Bench("estimate", "chain.estimate(device='cuda') vs the exported script's --bench --device cuda",
          # The shared 500x375 JPEGs, not the 12 sample photos: on those (8 sizes) one repeat's runs spread
          # over 37-87% of their medians on the H100 and H200, and the check's error read noise.
          ("estimate_accuracy.py", "--device", "cuda", "--backends", "kornia,dali", "--repeats", "1",
           "--batch-size", "64", "--workers", "8", "--images", "{jpegs}"),
          ("estimate_accuracy.py", "--device", "cpu", "--backends", "kornia,dali", "--repeats", "1", "--batch-size",
           "8", "--workers", "2"),
          120, (Target("kornia_error", "|<=|", 0.10), Target("dali_error", "|<=|", 0.10)), ("nvidia.dali", "kornia")),
    Bench("kornia_loader_vs_expert", "Exported Kornia loader vs a hand-written DataLoader + AugmentationSequential "
          "on the GPU, batch 64",
          ("kornia_export_vs_handwritten.py", "--batch", "64", "--blocks", "3", "--workers", "8", "--device", "cuda"),
          ("kornia_export_vs_handwritten.py", "--batch", "8", "--blocks", "2", "--block", "2", "--workers", "1",
           "--device", "cpu"),
          60, (Target("ratio", ">=", 0.95),), ("kornia",)),
)
PARTS = ("tests", *(b.name for b in BENCHES))


@dataclass
class Outcome:
    """What one part did: status is passed, failed, missed target, timed out, skipped or not run."""

    name: str
    title: str
    status: str
    seconds: float = 0.0
    detail: str = ""
    command: str = ""
    log: str = ""
    figures: dict = field(default_factory=dict)
    targets: tuple[Target, ...] = ()

    @property
    def bad(self) -> bool:
        return self.status in ("failed", "missed target", "timed out")


class Clock:
    """The check's time budget: what is left, and how long a part may take."""

    def __init__(self, budget_s: float):
        self.end = time.monotonic() + budget_s

    def left(self) -> float:
        return self.end - time.monotonic()

    def allow(self, cap_s: float) -> float:
        return min(cap_s, self.left())


def run_logged(argv: list[str], log: Path, timeout_s: float, env: dict) -> tuple[int | None, float]:
    """Run `argv` from the project's root with its output in `log`; (exit status or None when it ran
    past `timeout_s`, seconds). Its whole process group is killed on time-out (loader workers too)."""
    start = time.monotonic()
    with open(log, "w", encoding="utf-8") as out:
        out.write("$ " + " ".join(argv) + "\n")
        out.flush()
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=max(1.0, timeout_s))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            out.write(f"\n[gpu_check] killed after {timeout_s:.0f} s (the part's time cap or the check's budget)\n")
            rc = None
    return rc, time.monotonic() - start


def machine(env: dict) -> dict[str, str]:
    """Device, driver and library versions, read in a child process with the check's environment."""
    probe = r"""
import json, importlib, platform
info = {"python": platform.python_version()}
try:
    import torch
    info.update(torch=torch.__version__, cuda_build=str(torch.version.cuda), gpu=str(torch.cuda.is_available()))
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        info.update(device=p.name, memory_gib=f"{p.total_memory / 2**30:.0f}", devices=str(torch.cuda.device_count()))
except Exception as exc:
    info["torch"] = f"fails to import: {exc}"
for label, module in (("torchvision", "torchvision"), ("DALI", "nvidia.dali"), ("Kornia", "kornia"),
                      ("nvImageCodec", "nvidia.nvimgcodec"), ("Albumentations", "albumentations"),
                      ("ipywidgets", "ipywidgets"), ("matplotlib", "matplotlib"), ("numpy", "numpy"),
                      ("pytest", "pytest"), ("pytest-xdist", "xdist"), ("pytest-timeout", "pytest_timeout")):
    try:
        info[label] = getattr(importlib.import_module(module), "__version__", "present")
    except Exception as exc:
        info[label] = "missing" if isinstance(exc, ImportError) else f"fails to import: {type(exc).__name__}"
print(json.dumps(info))
"""
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)
    info = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {"probe": proc.stderr[-300:]}
    smi = shutil.which("nvidia-smi")
    if smi:
        out = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout.strip().splitlines()
        if out:
            info["driver"] = out[0].split(",")[-1].strip()
    info["host"] = f"{platform.machine()}, {os.cpu_count()} cores"
    return info


def install_wheels(folder: Path, target: Path, env: dict) -> list[str]:
    """Install the wheels in `folder` whose distribution the check's Python lacks into `target`
    (no index, no dependency resolution: the folder holds what they need); their names."""
    missing = []
    for wheel in sorted(folder.glob("*.whl")):
        dist = wheel.name.split("-")[0]
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            missing.append(wheel)
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--target", str(target), *map(str, missing)], check=True, env=env)
    return [w.name.split("-")[0] for w in missing]


def run_tests(out: Path, clock: Clock, env: dict, files: list[str], gpu: bool, plugins: dict[str, bool],
              cap_s: float = TESTS_CAP_S) -> Outcome:
    """Every test marked cuda or gpu_aware, -x off; outcome from the JUnit XML."""
    xml, log = out / "tests.xml", out / "logs" / "tests.log"
    # No notebooks here: without nbval's plugin (and nbformat's imports) pytest starts about 4 s sooner.
    argv = [sys.executable, "-m", "pytest", *files, "-m", "cuda or gpu_aware", "-p", "no:cacheprovider",
            "-p", "no:nbval", "-o", "addopts=", "-q", "-rfEs", "--durations=25", f"--junitxml={xml}"]
    if plugins.get("pytest-xdist") and gpu:
        # 16 cores on the lent machines; the every-op tests are one per op, so the workers share them
        # out (322 tests took 169 s on 12 workers on an H100; on 8 they ran past a 200 s cap).
        argv += ["-n", "12", "--dist", "load"]
    if plugins.get("pytest-timeout"):
        argv += ["--timeout", "120"]  # one hung test must not take the whole part
    command = shlex.join(["python3", *argv[1:]])
    rc, seconds = run_logged(argv, log, clock.allow(cap_s), env)
    title = "CUDA tests (marked cuda or gpu_aware)"
    counts, failures, slowest = read_junit(xml)
    detail = (f"{counts['passed']} passed, {counts['failed']} failed, {counts['errors']} errors, "
              f"{counts['skipped']} skipped")
    if rc is None:  # no JUnit XML then: say how far it got from pytest's progress lines
        return Outcome("tests", title, "timed out", seconds, progress(log) + " before the cap", command, str(log))
    if rc == 5 or (rc == 0 and not xml.exists()):
        return Outcome("tests", title, "failed", seconds, "pytest collected no test", command, str(log))
    if counts["failed"] or counts["errors"] or rc != 0:
        status = "failed"
    elif not gpu:
        status = "skipped"
        detail += "; the CUDA tests were skipped: torch sees no GPU"
    else:
        status = "passed"
    lines = [detail]
    lines += [f"- FAILED {name}: {message}" for name, message in failures]
    if slowest:
        lines += ["", "Slowest:", "", "| test | s |", "|---|---|"] + [f"| {n} | {s:.1f} |" for n, s in slowest]
    return Outcome("tests", title, status, seconds, "\n".join(lines), command, str(log))


def progress(log: Path) -> str:
    """How far a pytest run cut off before its summary got, from its progress lines (one character a
    test: . passed, F failed, E error, s skipped), e.g. "151 tests ran: 3 failed, 0 errors"."""
    marks = ""
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        body = line.split(" [")[0].strip()
        if body and set(body) <= set(".FEsxX"):
            marks += body
    return f"{len(marks)} tests ran: {marks.count('F')} failed, {marks.count('E')} errors"


def read_junit(xml: Path) -> tuple[dict, list[tuple[str, str]], list[tuple[str, float]]]:
    """(counts, [(failed test, first line of its message)], the 10 slowest tests that ran)."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures, times = [], []
    if not xml.exists():
        return counts, failures, times
    for case in ElementTree.parse(xml).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        kinds = {child.tag for child in case}
        if "failure" in kinds or "error" in kinds:
            counts["failed" if "failure" in kinds else "errors"] += 1
            node = case.find("failure") if "failure" in kinds else case.find("error")
            failures.append((name, (node.get("message") or "").splitlines()[0][:200] if node is not None else ""))
        elif "skipped" in kinds:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
            times.append((name, float(case.get("time") or 0)))
    return counts, failures, sorted(times, key=lambda t: -t[1])[:10]


def write_jpegs(folder: Path, count: int, out: Path, clock: Clock, env: dict) -> Outcome:
    """The 500x375 JPEG folder that the loader benchmarks share, written in parallel."""
    log = out / "logs" / "jpegs.log"
    argv = [sys.executable, str(HERE / "loaders_imagenet.py"), "--write-jpegs", str(folder), "--files", str(count)]
    rc, seconds = run_logged(argv, log, clock.allow(120), env)
    status = "passed" if rc == 0 else "timed out" if rc is None else "failed"
    return Outcome("jpegs", f"{count} JPEGs 500x375 for the loader benchmarks", status, seconds,
                   "" if rc == 0 else "the loader benchmarks will fail without them; see the log",
                   " ".join(argv[1:]), str(log))


def run_bench(bench: Bench, out: Path, clock: Clock, env: dict, rehearse: bool, jpegs: Path,
              available: dict[str, bool]) -> Outcome:
    figures_path = out / "figures" / f"{bench.name}.json"
    argv = [sys.executable, str(HERE / bench.argv(rehearse, jpegs, figures_path)[0]),
            *bench.argv(rehearse, jpegs, figures_path)[1:]]
    command = shlex.join(["python3", str(Path(argv[1]).relative_to(ROOT)), *argv[2:]])
    outcome = Outcome(bench.name, bench.title, "", command=command, targets=bench.targets)
    lacking = [m for m in bench.needs if not available.get(m, True)]
    if lacking:
        outcome.status, outcome.detail = "skipped", f"missing here: {', '.join(lacking)}"
        return outcome
    if clock.left() < min(bench.cap_s, 20):
        outcome.status = "not run"
        outcome.detail = f"out of the check's time budget; alone: `python3 bench/gpu_check.py --parts {bench.name}`"
        return outcome
    log = out / "logs" / f"{bench.name}.log"
    cap = clock.allow(bench.cap_s * (REHEARSAL_SLOWER if rehearse else 1))
    rc, outcome.seconds = run_logged(argv, log, cap, env)
    outcome.log = str(log)
    if rc is None:
        outcome.status, outcome.detail = "timed out", f"ran past {cap:.0f} s (its cap, or what the budget left)"
        return outcome
    if rc != 0 or not figures_path.exists():
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        outcome.status, outcome.detail = "failed", f"exit {rc}: " + " / ".join(tail)[-400:]
        return outcome
    outcome.figures = json.loads(figures_path.read_text(encoding="utf-8"))
    outcome.status, outcome.detail = judge(outcome.figures, bench.targets, rehearse)
    return outcome


def judge(figures: dict[str, float], targets: tuple[Target, ...], rehearse: bool) -> tuple[str, str]:
    """(status, detail) of a benchmark's figures against its targets.

    Example:
        judge({"ratio": 0.9}, (Target("ratio", ">=", 0.95),), False)
        == ("missed target", "ratio 0.9, want >= 0.95")
    """
    absent = [t.figure for t in targets if t.figure not in figures]
    if absent:
        return "failed", f"the benchmark wrote no figure {', '.join(absent)}"
    if rehearse:
        return "passed", "rehearsal on the CPU: the targets are a GPU's, not judged"
    missed = [f"{t.figure} {figures[t.figure]:.4g}, want {t}" for t in targets if not t.met(figures[t.figure])]
    return ("missed target", "; ".join(missed)) if missed else ("passed", "")


def report(path: Path, info: dict, outcomes: list[Outcome], args, started: str, rehearse: bool) -> None:
    """Write the markdown report: the machine, a summary, the tests, each figure beside its target."""
    versions = ["device", "memory_gib", "driver", "cuda_build", "torch", "torchvision", "DALI", "Kornia",
                "nvImageCodec", "Albumentations", "ipywidgets", "matplotlib", "numpy", "pytest", "pytest-xdist",
                "python", "host"]
    lines = [f"# GPU check ({'CPU rehearsal' if rehearse else 'GPU' if info.get('gpu') == 'True' else 'no GPU'})",
             "", f"Started {started}; budget {args.budget:.0f} s. Command: `python3 bench/gpu_check.py "
             f"{' '.join(sys.argv[1:])}`", "", "## Machine", "",
             "| " + " | ".join(versions) + " |", "|" + "---|" * len(versions),
             "| " + " | ".join(str(info.get(k, "-")) for k in versions) + " |", "", "## Summary", "",
             "| part | status | seconds | detail |", "|---|---|---|---|"]
    for o in outcomes:
        first = o.detail.splitlines()[0] if o.detail else ""
        lines.append(f"| {o.name} | {o.status} | {o.seconds:.0f} | {first} |")
    lines += ["", "## Figures against targets", "", "| part | figure | measured | target | met |",
              "|---|---|---|---|---|"]
    for o in outcomes:
        if o.name == "tests":
            continue
        named = {t.figure: t for t in o.targets}
        for key, value in o.figures.items():
            t = named.get(key)
            met = "-" if t is None else "not judged" if rehearse else "yes" if t.met(value) else "**no**"
            lines.append(f"| {o.name} | {key} | {value:.4g} | {t if t else ''} | {met} |")
        for t in o.targets:
            if t.figure not in o.figures:
                lines.append(f"| {o.name} | {t.figure} | {o.status} | {t} | - |")
    for o in outcomes:
        lines += ["", f"## {o.name}: {o.title}", "", f"Status: **{o.status}** ({o.seconds:.0f} s).",
                  f"Command: `{o.command}`" if o.command else "", f"Log: `{Path(o.log).relative_to(path.parent)}`"
                  if o.log else "", "", o.detail]
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT") or "gpu_check_out", help="folder for the report")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S, help="seconds for the whole check")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of: {', '.join(PARTS)}")
    parser.add_argument("--wheels", help="a folder of extra wheels (bench/gpu_extra_wheels.sh) to install first")
    parser.add_argument("--rehearse", action="store_true", help="run the benchmarks on the CPU, small")
    parser.add_argument("--tests-cap", type=float, default=TESTS_CAP_S,
                        help="seconds for the tests part")
    parser.add_argument("--test-files", default=",".join(TEST_FILES), help="where pytest looks for the CUDA tests")
    args = parser.parse_args(argv)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; the parts are {', '.join(PARTS)}")
    out = Path(args.out).resolve()
    (out / "logs").mkdir(parents=True, exist_ok=True)
    (out / "figures").mkdir(exist_ok=True)
    clock = Clock(args.budget)
    started = datetime.datetime.now().isoformat(timespec="seconds")
    env = {**os.environ, "KORNIA_INSTALLATION_MODE": "RAISE", "NO_ALBUMENTATIONS_UPDATE": "1",
           "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    notes = []
    if args.wheels:
        site = Path(tempfile.gettempdir()) / "wbgpu-extra"
        installed = install_wheels(Path(args.wheels), site, env)
        env["PYTHONPATH"] = os.pathsep.join([str(site), env["PYTHONPATH"]])
        notes.append(f"installed from {args.wheels}: {', '.join(installed) or 'nothing (all present)'}")
    info = machine(env)
    gpu = info.get("gpu") == "True"
    available = {"nvidia.dali": info.get("DALI") not in ("missing", None), "kornia": info.get("Kornia") != "missing",
                 "ipywidgets": info.get("ipywidgets") != "missing"}
    outcomes: list[Outcome] = []
    path = out / "report.md"
    if notes:
        outcomes.append(Outcome("setup", "Extra wheels", "passed", detail="; ".join(notes)))
    report(path, info, outcomes, args, started, args.rehearse)

    if "tests" in parts:
        plugins = {name: info.get(name, "missing") != "missing" for name in ("pytest-xdist", "pytest-timeout")}
        outcomes.append(run_tests(out, clock, env, args.test_files.split(","), gpu, plugins, args.tests_cap))
        report(path, info, outcomes, args, started, args.rehearse)
    benches = [b for b in BENCHES if b.name in parts]
    if benches and not gpu and not args.rehearse:
        for b in benches:
            outcomes.append(Outcome(b.name, b.title, "skipped", detail="torch sees no GPU (--rehearse runs it on "
                                    "the CPU)", targets=b.targets))
        benches = []
    with tempfile.TemporaryDirectory() as tmp:
        jpegs = Path(tmp) / "jpegs"
        if any("{jpegs}" in " ".join(b.rehearse_args if args.rehearse else b.gpu_args) for b in benches):
            made = write_jpegs(jpegs, 256 if args.rehearse else JPEG_FILES, out, clock, env)
            if made.bad:
                outcomes.append(made)
        for bench in benches:
            outcomes.append(run_bench(bench, out, clock, env, args.rehearse, jpegs, available))
            report(path, info, outcomes, args, started, args.rehearse)
    report(path, info, outcomes, args, started, args.rehearse)
    for o in outcomes:
        print(f"{o.name:>24}: {o.status} ({o.seconds:.0f} s) {o.detail.splitlines()[0] if o.detail else ''}")
    print(f"report: {path}")
    return 1 if any(o.bad for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
