"""A CPU batch's levels shared out to threads (workbench/runtime/kornia_modules/threads.py): the same values
as one thread gives, the parts on two threads, torch's threads given back, failures raised, and nothing
shared out for small batches, a loader worker's single thread, or inside a part."""
import threading

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.codegen import emit, load_module
from workbench.runtime.kornia_modules import threads


@pytest.fixture
def two_torch_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def images_of(photos, count, size):
    return [np.ascontiguousarray(photos[n % len(photos)][:size, :size]) for n in range(count)]


# Chains whose first stretch stays on levels: a resize (torch's uint8 antialiased resize, shared_parts), crops,
# flips, a ColorJitter, a grey and a blur (each_sample), a warp (cv2.warpAffine), float tables per sample.
SHARED_CHAINS = {
    "resize, crop, normalize": wb.Chain(seed=2).add("Resize", size=[72, 80]).add("CenterCrop", size=[64, 64])
    .add("Normalize"),
    "crop, flip, jitter, grey, blur": wb.Chain(seed=3).add("RandomResizedCrop", size=[56, 56]).add("HorizontalFlip")
    .add("ColorJitter", p=0.8, brightness=[0.6, 1.4], contrast=[0.6, 1.4], saturation=[0.6, 1.4], hue=[-0.1, 0.1])
    .add("Grayscale", p=0.3).add("GaussianBlur", p=0.5, kernel_size=[5, 5], sigma=[0.1, 2.0]),
    "rotate, flip, gamma, normalize": wb.Chain(seed=4).add("Rotate", degrees=[-20, 20]).add("VerticalFlip")
    .add("Gamma").add("Normalize"),
}


@pytest.mark.parametrize("name, count", [(name, 40) for name in sorted(SHARED_CHAINS)]
                         + [("resize, crop, normalize", 8)])
def test_levels_shared_out_to_two_threads_are_the_values_of_one(name, count, sample_images, two_torch_threads):
    """The program's own run of 40 images (8 for the resize, whose parts are shared out from 2), shared out
    and not (SHARED_MIN_SAMPLES raised past the batch, torch's one thread then for every part): bit for bit
    the same float batch; the shared run's parts ran on two threads, torch on one thread meanwhile, and torch
    has its two threads back after it."""
    chain = SHARED_CHAINS[name]
    size = 96
    images = images_of(sample_images, count, size)
    module = load_module(emit(chain, "kornia"), "kornia")
    seen, torch_threads = set(), set()
    part = module.in_part

    def recorded(work, start, stop):
        seen.add(threading.get_ident())
        torch_threads.add(torch.get_num_threads())
        part(work, start, stop)
    module.in_part = recorded
    try:
        shared, _ = module.augment_images(images, seed=5, device="cpu")
        assert len(seen) == 2 and torch_threads == {1}, (seen, torch_threads)
        assert torch.get_num_threads() == 2 and module.SHARING["width"] == 0
        seen.clear()
        module.SHARED_MIN_SAMPLES = 10 ** 6
        module.SHARING["width"] = 1  # (sample_threads leaves an outer stretch's width alone)
        alone, _ = module.augment_images(images, seed=5, device="cpu")
        assert seen == set()
    finally:
        module.in_part = part
        module.SHARING["width"] = 0
    assert shared.dtype == np.float32 and shared.shape[0] == count
    np.testing.assert_array_equal(shared, alone)


def test_a_part_that_fails_raises_after_every_part_ends_and_torch_gets_its_threads_back(two_torch_threads):
    ended = []

    def work(start, stop):
        if start:
            raise ValueError("sample 16 failed")
        ended.append((start, stop))
    with pytest.raises(ValueError, match="sample 16 failed"):
        with threads.sample_threads(32):
            threads.each_sample(32, work)
    assert ended == [(0, 16)]
    assert torch.get_num_threads() == 2 and threads.SHARING["width"] == 0


def test_small_batches_a_single_thread_and_a_part_share_nothing_out(two_torch_threads):
    calls = []

    def work(start, stop):
        calls.append((start, stop, threading.get_ident()))
    with threads.sample_threads(8):  # OpenCV's loops: fewer than SHARED_MIN_SAMPLES
        assert torch.get_num_threads() == 1
        threads.each_sample(8, work)
    assert calls == [(0, 8, threading.get_ident())] and torch.get_num_threads() == 2
    calls.clear()
    torch.set_num_threads(1)  # as in a loader worker
    with threads.sample_threads(64):
        threads.each_sample(64, work)
    assert calls == [(0, 64, threading.get_ident())]
    calls.clear()
    torch.set_num_threads(2)
    with threads.sample_threads(32):
        threads.each_sample(32, lambda start, stop: threads.each_sample(stop - start, work))
    assert sorted(call[:2] for call in calls) == [(0, 16), (0, 16)] and len({call[2] for call in calls}) == 2


def test_shared_parts_are_one_tensor_in_the_order_of_the_samples(two_torch_threads):
    def make(first, last):
        return torch.arange(first, last).view(-1, 1, 1, 1).expand(-1, 3, 2, 2).contiguous(
            memory_format=torch.channels_last)
    with threads.sample_threads(33):
        out = threads.shared_parts(33, make)
    assert out.is_contiguous(memory_format=torch.channels_last)
    assert out[:, 0, 0, 0].tolist() == list(range(33))
    assert threads.shared_parts(33, make).data_ptr() != out.data_ptr()  # (outside: make(0, 33) itself)
