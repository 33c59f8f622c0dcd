"""Exports behave as they did before the redesign of issue 28: every frozen export
(`export_snapshot.py`: every op of every backend, a few a chain) and today's export of the same
chain give the same `--save` output, bit for bit, on the same images and seeds."""
import contextlib
import io
import tarfile

import numpy as np
import pytest

from conftest import _loaded_from
from export_snapshot import BACKENDS, SEED, SNAPSHOT, chains, cpu_ops

CASES = [(backend, name) for backend in BACKENDS for name in chains(backend)]


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    """The frozen exports, unpacked: name -> path."""
    folder = tmp_path_factory.mktemp("exports_before")
    with tarfile.open(SNAPSHOT, "r:xz") as tar:
        tar.extractall(folder, filter="data")
    return {path.stem: path for path in folder.glob("*.py")}


def saved(script, folder, out, seed) -> dict[str, np.ndarray]:
    with contextlib.redirect_stdout(io.StringIO()):
        _loaded_from(script).main(["--images", str(folder), "--seed", str(seed), "--save", str(out)])
    with np.load(out) as data:
        return {key: data[key] for key in data.files}


def test_the_snapshot_holds_every_op_of_every_backend(frozen):
    # A new op (or one a backend newly runs) changes the chains: freeze again (see export_snapshot.py)
    # on a commit whose other exports give what they gave.
    assert sorted(frozen) == sorted(name for _, name in CASES), "run python tests/export_snapshot.py"
    for backend in BACKENDS:
        covered = {step.op for chain in chains(backend).values() for step in chain.steps}
        assert covered == set(cpu_ops(backend)) | {"Resize"}, backend


@pytest.mark.parametrize("backend,name", CASES)
def test_export_gives_what_it_gave_before(backend, name, frozen, small_folder, tmp_path):
    now = tmp_path / f"{name}.py"
    chains(backend)[name].export(backend, path=now.name, folder=tmp_path)
    before = saved(frozen[name], small_folder, tmp_path / "before.npz", SEED)
    after = saved(now, small_folder, tmp_path / "after.npz", SEED)
    assert sorted(after) == sorted(before), "the saved arrays differ in name"
    for key in before:
        same = np.array_equal(after[key], before[key], equal_nan=before[key].dtype.kind in "fc")
        assert after[key].dtype == before[key].dtype and same, f"{key} differs from the export before the redesign"
