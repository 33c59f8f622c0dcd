"""The warm measuring process (workbench/estimate/warm.py): each estimate still measures in a
process of its own that has run nothing else, forked from one process per session that did the
imports; it follows the caller's environment, and leaves nothing behind when the session ends."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest
from PIL import Image

import workbench as wb
from workbench.estimate import isolated, warm

TESTS = Path(__file__).parent
TINY = dict(batch_size=2, image_size=32, workers=0, runs=1, batches=1, progress=False)
CHAIN = wb.Chain(seed=1).add("HorizontalFlip").add("Brightness", factor=[0.8, 1.2])
pytestmark = pytest.mark.skipif(not warm.available(), reason="the warm process forks (Linux)")


def warm_process() -> psutil.Process:
    (process,) = [p for p in psutil.Process().children() if p.cmdline()[2:4] == ["workbench.estimate.isolated",
                                                                                   "--warm"]]
    return process


def measuring_pids(monkeypatch) -> list[int]:
    """Records the pid of each measuring child forked from here on."""
    pids = []
    fork = warm.WarmProcess.fork

    def recorded(self, *args):
        child = fork(self, *args)
        pids.append(child.pid)
        return child

    monkeypatch.setattr(warm.WarmProcess, "fork", recorded)
    return pids


def loads_dali(process: psutil.Process) -> bool:
    return any("libdali" in Path(m.path).name for m in process.memory_maps())


def test_each_estimate_measures_in_a_new_child_of_one_warm_process(monkeypatch):
    warm.close_all()  # (an earlier test in this process may have started one, and measured DALI with it)
    pids = measuring_pids(monkeypatch)
    CHAIN.estimate(backend="kornia", **TINY)
    first = warm_process()
    # A backend's own libraries are imported in the warm process at its first measurement, and kept.
    assert not loads_dali(first)
    for backend in ("dali", "albumentations", "dali"):
        est = CHAIN.estimate(backend=backend, **TINY)
        assert est.backend == backend and est.images_per_s > 0
        assert loads_dali(first)
    assert warm_process().pid == first.pid, "the warm process is started once"
    assert len(set(pids)) == 4 and os.getpid() not in pids and first.pid not in pids
    assert not any(psutil.pid_exists(pid) for pid in pids), "each child is gone once its estimate returns"
    # The warm process itself never measures: it imported the libraries, but built no loader.
    assert first.num_threads() == 1


def test_a_failing_measurement_leaves_the_warm_process_serving(tmp_path, small_images):
    for i, image in enumerate(small_images[:2]):  # headers that read, data cut short: the child fails
        path = tmp_path / f"img_{i}.png"
        Image.fromarray(image).save(path)
        path.write_bytes(path.read_bytes()[:400])
    with pytest.raises(wb.InputError, match=r"img_\d\.png: (truncated|damaged) .*--skip-bad"):
        CHAIN.estimate(images=tmp_path, **dict(TINY, image_size=None))
    first = warm_process()
    assert CHAIN.estimate(**TINY).images_per_s > 0 and warm_process().pid == first.pid


def test_a_changed_environment_starts_a_new_warm_process(monkeypatch):
    CHAIN.estimate(**TINY)
    before = warm_process().pid
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "another test")  # set by pytest per test: no restart
    CHAIN.estimate(**TINY)
    assert warm_process().pid == before
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # read when torch is imported: the imports must be redone
    CHAIN.estimate(**TINY)
    assert warm_process().pid != before and not psutil.pid_exists(before)


def test_the_child_runs_in_the_callers_environment_and_folder(monkeypatch, tmp_path):
    # A request whose chain module reads the environment would see the caller's: checked directly here.
    monkeypatch.setenv("WORKBENCH_TEST_MARK", "from the caller")
    monkeypatch.chdir(tmp_path)
    errors = tmp_path / "errors.txt"
    errors.write_text("")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    child = warm.fork_child("warm_probe", {}, env, str(errors))
    lines = list(child.lines)
    child.wait()
    assert lines == [f"{os.environ['WORKBENCH_TEST_MARK']}|{tmp_path}\n"], (lines, errors.read_text())


def test_the_warm_process_ends_with_the_session_and_leaves_no_files(tmp_path):
    # A DALI estimate of a step that branches on its draws: DALI's autograph writes each converted
    # function to a temporary file and deletes it at exit (atexit), which a forked child that ends
    # with os._exit never reaches: every such estimate left its files behind until the child ran
    # the exit functions it had registered itself.
    script = textwrap.dedent("""
        import psutil, workbench as wb
        tiny = dict(batch_size=2, image_size=32, workers=0, runs=1, batches=1, progress=False)
        wb.Chain(seed=1).add("HorizontalFlip").estimate(**tiny)
        wb.Chain(seed=1).add("Rotate", p=0.5).estimate(backend="dali", **{**tiny, "workers": 1})
        (warm,) = [p for p in psutil.Process().children() if "--warm" in p.cmdline()]
        print(warm.pid, warm.cmdline()[-1])
    """)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True,
                         env={**os.environ, "TMPDIR": str(temporary)})
    pid, socket_path = out.stdout.split()
    try:
        psutil.Process(int(pid)).wait(30)
    except psutil.NoSuchProcess:
        pass
    assert not psutil.pid_exists(int(pid)) and not os.path.exists(os.path.dirname(socket_path))
    assert sorted(p.name for p in temporary.iterdir()) == []


def test_without_fork_each_estimate_starts_a_fresh_python(monkeypatch):
    monkeypatch.setattr(warm, "available", lambda: False)
    started = []
    popen = isolated.subprocess.Popen

    def recorded(args, **kwargs):
        started.append(args)
        return popen(args, **kwargs)

    monkeypatch.setattr(isolated.subprocess, "Popen", recorded)
    assert CHAIN.estimate(**TINY).images_per_s > 0
    assert started == [[sys.executable, "-m", "workbench.estimate.isolated"]]
