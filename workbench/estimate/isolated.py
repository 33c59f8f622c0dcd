"""Measure in a fresh Python process, the way the exported script's `--bench` runs.

A long-lived process (a notebook kernel that has run previews, DALI pipelines and other
loaders) measured the same loader up to a third slower than a fresh one on the dev VM, and
forking DataLoader workers from a kernel copies the kernel. So `estimate` hands the chain, the
files and the settings to `python -m workbench.estimate.isolated`, which measures and writes
JSON lines back: progress while it runs, then the result. On Linux that process is forked
from a warm one that imported everything once (warm.py): as fresh, without 3.5 s of imports.
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from ..errors import InputError, WorkbenchError
from ..model import ChainModel
from .files import BenchInput
from . import warm
from .measure import Measurement, Settings, measure

TAG = "workbench-estimate "  # prefixes our lines; libraries may print to stdout too


def measure_isolated(chain, inp: BenchInput, settings: Settings, phases) -> Measurement:
    """`measure` in a child process; progress is relayed to `phases` as it arrives. A progress
    callback that raises (EstimateCancelled, from a cancel button) stops the child too."""
    request = {"chain": chain.to_dict(), "folder": str(inp.folder), "size": list(inp.size),
               "files": [str(f) for f in inp.files], "settings": asdict(settings),
               "coco": None if inp.coco is None else str(inp.coco),
               "masks": None if inp.masks is None else str(inp.masks)}
    env = dict(os.environ, KORNIA_INSTALLATION_MODE="RAISE")
    with tempfile.NamedTemporaryFile("w+", prefix="wb-estimate-", suffix=".err") as errors:
        child = (warm.fork_child(__name__, request, env, errors.name) if warm.available()
                 else _FreshChild(request, env, errors))
        result, failure = None, None
        try:
            for line in child.lines:
                if not line.startswith(TAG):
                    continue
                message = json.loads(line[len(TAG):])
                if "progress" in message:
                    name, done, total = message["progress"]
                    phases.tick(name)(done, total)  # may raise (a cancel): the child is stopped below
                elif "result" in message:
                    result = Measurement(**message["result"])
                elif "error" in message:
                    failure = message["error"]
                elif "input_error" in message:
                    failure = InputError(message["input_error"])
        finally:
            if result is None and failure is None:
                child.stop()  # stopped early: its DataLoader workers die with it (they watch their parent)
            child.wait()
        errors.seek(0)
        tail = errors.read()[-2000:]
    if isinstance(failure, InputError):
        raise failure
    if failure:
        raise WorkbenchError(failure)
    if result is None:
        raise WorkbenchError(f"the measuring process stopped without a result: {tail.strip()}")
    return result


class _FreshChild:
    """A fresh `python -m workbench.estimate.isolated` (where no warm process can fork)."""

    def __init__(self, request: dict, env: dict[str, str], errors):
        self.proc = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=errors, text=True, env=env)
        self.proc.stdin.write(json.dumps(request))
        self.proc.stdin.close()
        self.lines = self.proc.stdout

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()

    def wait(self) -> None:
        self.proc.wait()
        self.proc.stdout.close()


class _Relay:
    """Stands in for `Phases` in the child: writes each progress tick as a line."""

    def tick(self, name: str):
        def progress(done: int, total: int) -> None:
            _send({"progress": [name, done, total]})

        return progress


def _send(message: dict) -> None:
    sys.stdout.write(TAG + json.dumps(message) + "\n")
    sys.stdout.flush()


def run_request(request: dict) -> int:
    """Measure what `request` asks for, writing progress and the result (or the error) as lines."""
    try:
        annotations = {k: Path(request[k]) if request.get(k) else None for k in ("coco", "masks")}
        inp = BenchInput(Path(request["folder"]), tuple(request["size"]), [Path(f) for f in request["files"]],
                         **annotations)
        m = measure(ChainModel.from_dict(request["chain"]), inp, Settings(**request["settings"]), _Relay())
    except InputError as exc:  # the user's files (one that cannot be decoded): the parent raises it as it is
        _send({"input_error": str(exc)})
        return 1
    except Exception as exc:  # reported to the parent, which raises it with this text
        _send({"error": f"measuring failed ({type(exc).__name__}): {exc}"})
        return 1
    _send({"result": asdict(m)})
    return 0


# What the exported loaders import besides the workbench (each where installed), imported in the
# warm process rather than in each measurement: every loader's at its start, a backend's own
# libraries at its first measurement (DALI alone took seconds to import, which an app that only
# ever measures Kornia need not wait for).
PRELOAD = ("torch.utils.data", "kornia.augmentation", "PIL.Image")
BACKEND_PRELOAD = {"dali": ("nvidia.dali.fn", "nvidia.dali.pipeline", "nvidia.dali.types",
                            "nvidia.dali.plugin.pytorch"),
                   "albumentations": ("albumentations", "cv2")}


def _prepare(request: dict | None) -> None:
    names = PRELOAD if request is None else BACKEND_PRELOAD.get(request["settings"]["backend"], ())
    for name in names:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # not installed or broken here: a measurement that needs it says so itself
            pass


def main(argv: list[str]) -> int:
    if argv[:1] == ["--warm"]:
        warm.serve(argv[1], _prepare, run_request)
        return 0
    return run_request(json.load(sys.stdin))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
