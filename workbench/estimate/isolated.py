"""Measure in a fresh Python process, the way the exported script's `--bench` runs.

A long-lived process (a notebook kernel that has run previews, DALI pipelines and other
loaders) measured the same loader up to a third slower than a fresh one on the dev VM, and
forking DataLoader workers from a kernel copies the kernel. So `estimate` hands the chain, the
files and the settings to `python -m workbench.estimate.isolated`, which measures and writes
JSON lines back: progress while it runs, then the result.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from ..errors import WorkbenchError
from ..model import ChainModel
from .files import BenchInput
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
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen([sys.executable, "-m", "workbench.estimate.isolated"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
        proc.stdin.write(json.dumps(request))
        proc.stdin.close()
        result, failure = None, None
        try:
            for line in proc.stdout:
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
        finally:
            if proc.poll() is None and result is None and failure is None:
                proc.kill()  # stopped early: its DataLoader workers die with it (they watch their parent)
            proc.wait()
        errors.seek(0)
        tail = errors.read()[-2000:]
    if failure:
        raise WorkbenchError(failure)
    if result is None:
        raise WorkbenchError(f"the measuring process stopped (exit {proc.returncode}) without a result: {tail.strip()}")
    return result


class _Relay:
    """Stands in for `Phases` in the child: writes each progress tick as a line."""

    def tick(self, name: str):
        def progress(done: int, total: int) -> None:
            _send({"progress": [name, done, total]})

        return progress


def _send(message: dict) -> None:
    sys.stdout.write(TAG + json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> int:
    request = json.load(sys.stdin)
    try:
        annotations = {k: Path(request[k]) if request.get(k) else None for k in ("coco", "masks")}
        inp = BenchInput(Path(request["folder"]), tuple(request["size"]), [Path(f) for f in request["files"]],
                         **annotations)
        m = measure(ChainModel.from_dict(request["chain"]), inp, Settings(**request["settings"]), _Relay())
    except Exception as exc:  # reported to the parent, which raises it with this text
        _send({"error": f"measuring failed ({type(exc).__name__}): {exc}"})
        return 1
    _send({"result": asdict(m)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
