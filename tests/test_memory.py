"""A chain whose intermediates cannot fit in memory is refused before it runs (chain.run, the
preview caches, the estimate), naming the step, the size and both amounts; the chain is kept."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

import workbench as wb
from workbench.backends.kornia_cache import PrefixCache
from workbench.backends.memory import BYTES_PER_VALUE, PEAK_STATES, available_memory, memory_needed


def too_many(backend: str = "kornia", side: int = 8192) -> int:
    """How many images a Resize to side x side then a Rotate needs to want twice this machine's memory."""
    per_image = PEAK_STATES[backend] * side * side * 3 * BYTES_PER_VALUE
    return math.ceil(2 * available_memory("cpu") / per_image)


def huge_chain() -> wb.Chain:
    return wb.Chain(seed=1).add("Resize", size=[8192, 8192]).add("Rotate", degrees=[-10, 10])


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
def test_run_refuses_a_chain_that_cannot_fit_naming_step_size_and_memory(backend):
    chain = huge_chain()
    before = chain.to_dict()
    images = [np.zeros((8, 8, 3), np.uint8)] * too_many(backend)
    with pytest.raises(wb.InsufficientMemoryError) as info:
        chain.run(images, backend=backend)
    message = str(info.value)
    assert re.search(r"step [12] \((Resize|Rotate)\) works on \d+ image\(s\) of up to 8192x8192", message)
    needed, room = (float(x) for x in re.findall(r"about ([0-9.]+) GB .* and ([0-9.]+) GB is available", message)[0])
    assert needed > room > 0 and "nothing was run" in message and "smaller Resize" in message
    assert chain.to_dict() == before
    assert isinstance(info.value, MemoryError)  # code that guards against MemoryError keeps working


def test_the_preview_cache_and_the_estimate_refuse_it_too(tmp_path):
    images = [np.zeros((8, 8, 3), np.uint8)] * too_many()
    with pytest.raises(wb.InsufficientMemoryError, match="8192x8192"):
        PrefixCache().run(huge_chain(), images)
    with pytest.raises(wb.InsufficientMemoryError, match="run fewer images per batch at once"):
        huge_chain().estimate(batch_size=too_many(), image_size=16, workers=0, runs=1, batches=1, progress=False)


def test_an_ordinary_chain_runs_and_its_need_follows_the_sizes():
    images = wb.load_images()[:2]
    chain = wb.Chain(seed=1).add("RandomResizedCrop", size=[64, 64]).add("Rotate")
    assert chain.run(images).images.shape == (2, 64, 64, 3)
    need = memory_needed(chain, images, "kornia")
    widest = sum(max(i.shape[0] * i.shape[1], 64 * 64) for i in images)  # the crop's input is the photos
    assert (need.step, need.op) == (1, "RandomResizedCrop")
    assert need.bytes == int(PEAK_STATES["kornia"] * widest * 3 * BYTES_PER_VALUE)
    kept = memory_needed(chain, images, "kornia", kept_states=3)
    assert kept.bytes > need.bytes  # a preview keeps the state before each step, per draw
    assert memory_needed(wb.Chain().add("Rotate").add("HorizontalFlip", enabled=False), images, "dali").op == "Rotate"
    assert memory_needed(wb.Chain(), images, "kornia") is None


def test_available_memory_is_what_the_machine_reports():
    free = available_memory("cpu")
    total = int(next(line for line in open("/proc/meminfo") if line.startswith("MemTotal")).split()[1]) * 1024
    assert 0 < free <= total
