"""A CPU batch's levels shared out to threads of the program's own, torch kept to one thread meanwhile.

The levels' loops (levels.py) run OpenCV image by image, and torch's antialiased resize of uint8 images laid out N
x H x W x C keeps to one core: on 2 cores half of the machine sat idle. While a stretch that stays on levels runs
on a CPU batch (run_fused), its images are shared out to threads (shared_parts: the resize's; each_sample: OpenCV's
loops, from SHARED_MIN_SAMPLES), and torch keeps to one thread (sample_threads): its OpenMP threads spin on their
cores for some milliseconds after each parallel operation (libgomp's default wait policy), and a thread of ours
beside them was slower than one thread alone until milliseconds after torch's last parallel operation. Float
kernels are not shared out: torch's (its float upsampling among them) were several times slower on one thread than
on two. Each sample's work is its own (its draws are made before, no sample writes into another's
memory), so the values are the same however they are shared out. A loader worker, which torch keeps to one thread,
shares nothing out.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import torch

# The fewest samples each_sample shares out (OpenCV's loops): for 8 and 16 images of 224 x 224 the threads'
# hand-overs (and OpenCV's own threads, which its functions already use on one image) cost what sharing saved;
# from 32 the chains ran faster (bench/RESULTS.md, CPU sweep). shared_parts (torch's one-core kernels) shares out
# from 2.
SHARED_MIN_SAMPLES = 32
# The pools by (process, threads): a forked loader worker makes its own. "width": the threads the levels are
# shared out to now (0 outside sample_threads).
SHARING = {"pools": {}, "width": 0}
# Whether this thread runs a part already: a part's own loops run their samples themselves.
IN_PART = threading.local()


@contextmanager
def sample_threads(count):
    """Within it, torch keeps to one thread, and shared_parts and each_sample (from SHARED_MIN_SAMPLES samples)
    share `count` samples out to as many threads as torch had; for one sample, or one thread, or inside another,
    nothing changes.
    Example: with sample_threads(32): ... shares out to 2 threads on 2 cores, torch on one thread meanwhile."""
    threads = torch.get_num_threads()
    width = min(count, threads)
    if width <= 1 or SHARING["width"]:
        yield
        return
    SHARING["width"] = width
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        SHARING["width"] = 0


def each_sample(count, work, least=None):
    """work(start, stop) on contiguous parts of the samples range(count) that cover them, one part a thread,
    inside sample_threads (the calling thread takes the first part); for fewer than `least` samples (default
    SHARED_MIN_SAMPLES), elsewhere, and inside a part, work(0, count) alone.
    Example: inside sample_threads(32) on 2 cores, each_sample(32, work) calls work(0, 16) and work(16, 32) on
    two threads; outside it work(0, 32)."""
    parts = min(count, SHARING["width"])
    if parts <= 1 or count < (SHARED_MIN_SAMPLES if least is None else least) or getattr(IN_PART, "busy", False):
        if count:
            work(0, count)
        return
    key = (os.getpid(), parts)
    if key not in SHARING["pools"]:
        SHARING["pools"].clear()  # (a forked worker's copy of the parent's pool has no threads)
        SHARING["pools"][key] = ThreadPoolExecutor(parts - 1, thread_name_prefix="samples")
    bounds = [count * k // parts for k in range(parts + 1)]
    others = [SHARING["pools"][key].submit(in_part, work, bounds[k], bounds[k + 1]) for k in range(1, parts)]
    try:
        in_part(work, bounds[0], bounds[1])
    finally:
        for other in others:  # (no part writes into the batch after this returns, even where one failed)
            other.exception()
    for other in others:
        other.result()


def in_part(work, start, stop):
    """work(start, stop) as a part of each_sample's: loops inside it run their samples themselves."""
    IN_PART.busy = True
    try:
        work(start, stop)
    finally:
        IN_PART.busy = False


def shared_parts(count, make):
    """make(first, last) -> the tensor of samples first:last, on one part of the samples range(count) a thread
    (sample_threads' width), in one new tensor laid out as the first part is, each part written into it as it
    comes; make(0, count) itself where nothing is shared out.
    Example: shared_parts(32, lambda first, last: torch.full((last - first, 1), first)) holds 0 sixteen times,
    then 16, inside sample_threads(32) on 2 cores; outside it 0 thirty-two times."""
    size = -(-count // max(1, SHARING["width"]))
    if size >= count or getattr(IN_PART, "busy", False):
        return make(0, count)
    firsts, made, lock = list(range(0, count, size)), {}, threading.Lock()

    def make_parts(start, stop):
        for first in firsts[start:stop]:
            last = min(count, first + size)
            piece = make(first, last)
            with lock:
                if "out" not in made:
                    form = torch.channels_last if piece.dim() == 4 and not piece.is_contiguous() \
                        and piece.is_contiguous(memory_format=torch.channels_last) else torch.contiguous_format
                    made["out"] = torch.empty((count, *piece.shape[1:]), dtype=piece.dtype, device=piece.device,
                                              memory_format=form)
            made["out"][first:last] = piece
    each_sample(len(firsts), make_parts, least=2)
    return made["out"]
