'''The fixed parts of an exported Kornia script; `kornia.py` fills in the chain.

Placeholders are `{{NAME}}` so the code's own braces stay readable.
'''

HEADER = '''\
#!/usr/bin/env python3
"""Augmentation chain for Kornia (PyTorch), exported by the augmentation workbench.

Use it as a module or as a script:
  python THIS_FILE --images DIR --seed N --save out.npz      # augmented images + sampled params
  python THIS_FILE --images DIR --bench --batch-size 64      # throughput of the training loader
  torchrun --nproc-per-node 2 THIS_FILE --images DIR --epochs 1   # the loader under DDP

Reproducibility (`augment_images`, used by --save and by the workbench preview): torch's
generator is seeded with the seed; images are decoded by PIL to RGB and taken in file-name
order. Images of one size form one batch. With mixed sizes, the steps up to the first one
that fixes the size run one image at a time in that order, then the rest as one batch.
"""
'''

IMPORTS = '''\
import argparse
import os
import random
import time
from pathlib import Path

# Kornia may offer to pip-install optional extras; never wait on a prompt in a worker.
os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")

import kornia.augmentation as K
import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset, RandomSampler
from torch.utils.data.distributed import DistributedSampler
'''

BODY = '''\
# Kornia's bookkeeping entries, not sampled values.
_NOT_SAMPLED = ("forward_input_shape",)


def sampled_params(module):
    """The values `module` drew for its last batch, as numpy arrays with the batch first."""
    if isinstance(module._params, list):  # a kornia.augmentation.auto policy
        return policy_params(module)
    return {k: v.detach().cpu().numpy() for k, v in module._params.items() if k not in _NOT_SAMPLED}


def policy_params(policy):
    """What a policy (RandAugment, TrivialAugment, AutoAugment) chose for its last batch, per
    sample: the position of each chosen candidate ("policy_choice"; Kornia chooses once per
    batch), whether each op of those ran ("op_applied") and the magnitude it used
    ("op_magnitude": its sampled value, NaN for ops without one)."""
    positions = [name for name, _ in policy.named_children()]
    choice, applied, magnitudes = [], [], []
    for item in policy._params:
        candidate = policy.get_submodule(item.name)
        choice.append(positions.index(item.name))
        for op_item in item.data:
            gate = op_item.data["batch_prob"].float()
            factor = candidate.get_submodule(op_item.name)._factor_name
            value = op_item.data[factor].float() if factor else torch.full_like(gate, float("nan"))
            applied.append(gate)
            magnitudes.append(value.reshape(gate.shape))
    count = applied[0].shape[0]
    return {"batch_prob": np.ones(count, np.float32), "policy_choice": np.tile(np.asarray(choice), (count, 1)),
            "op_applied": torch.stack(applied, 1).cpu().numpy(),
            "op_magnitude": torch.stack(magnitudes, 1).cpu().numpy()}


def apply_steps(steps, batch, records=None):
    """Run `steps` in order on a float NCHW batch; append each step's draws to `records`."""
    for module in steps:
        batch = module(batch)
        if records is not None:
            records.append(sampled_params(module))
    return batch


def to_float(images, device):
    """uint8 NCHW (or CHW) on any device -> float32 in [0, 1] on `device`."""
    return images.to(device, non_blocking=True).float().div_(255.0)


def augment_batch(augmentation, images, device, records=None):
    """Augment a uint8 NCHW tensor, or a list of uint8 CHW tensors of mixed sizes.

    Mixed sizes: the steps before HEAD_STEPS run per image (the last of them fixes the
    size), then the remaining steps run on the stacked batch.
    """
    if torch.is_tensor(images):
        return apply_steps(augmentation, to_float(images, device), records)
    head, tail = augmentation[:HEAD_STEPS], augmentation[HEAD_STEPS:]
    head_records = [] if records is not None else None
    outputs = []
    for image in images:
        step_records = [] if records is not None else None
        outputs.append(apply_steps(head, to_float(image[None], device), step_records))
        if head_records is not None:
            head_records.append(step_records)
    if records is not None:
        for k in range(len(head)):
            records.append({key: np.concatenate([r[k][key] for r in head_records]) for key in head_records[0][k]})
    if len({tuple(o.shape) for o in outputs}) > 1:
        return [o[0] for o in outputs]  # no step made the sizes equal (HEAD_STEPS covers all steps)
    return apply_steps(tail, torch.cat(outputs), records)


def augment_images(images, seed=SEED, device="cpu"):
    """Augment HxWx3 uint8 arrays in the given order with `seed`, as the workbench preview does.

    Returns (images, params): images as an NxHxWxC float32 array (a list when sizes differ),
    params as one dict per enabled step of arrays with the sample index first.
    """
    device = torch.device(device)
    augmentation = build_augmentation().to(device)
    tensors = [torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1) for image in images]
    batch = torch.stack(tensors) if len({t.shape for t in tensors}) == 1 else tensors
    cuda = [device] if device.type == "cuda" else []
    records = []
    # fork_rng: seeding here must not change the caller's random stream.
    with torch.random.fork_rng(devices=cuda), torch.no_grad():
        torch.manual_seed(seed)
        out = augment_batch(augmentation, batch, device, records)
    if isinstance(out, list):
        return [o.permute(1, 2, 0).cpu().numpy() for o in out], records
    return out.permute(0, 2, 3, 1).contiguous().cpu().numpy(), records


# ---------------------------------------------------------------------------------------
# Training loader: decode on worker processes, pin, copy ahead to the GPU, augment there.
# ---------------------------------------------------------------------------------------
class ImageFolderDataset(Dataset):
    """Image files under `root` (recursive, name order); the label is the index of the
    first-level sub-folder (ImageFolder layout), 0 for files directly in `root`."""

    def __init__(self, root):
        self.root = Path(root)
        self.files = list_image_files(self.root)
        if not self.files:
            raise FileNotFoundError(f"no image files under {self.root}")
        folders = [f.relative_to(self.root).parts for f in self.files]
        self.classes = sorted({parts[0] for parts in folders if len(parts) > 1})
        index = {name: i for i, name in enumerate(self.classes)}
        self.labels = [index[parts[0]] if len(parts) > 1 else 0 for parts in folders]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return torch.from_numpy(decode_image(self.files[i])).permute(2, 0, 1).contiguous(), self.labels[i]


def collate_uint8(batch):
    """Stack same-size images into one uint8 NCHW tensor; keep a list when sizes differ."""
    images, labels = zip(*batch)
    if len({tuple(i.shape) for i in images}) == 1:
        images = torch.stack(images)
    return images, torch.tensor(labels, dtype=torch.long)


def seed_worker(worker_id):
    """Seed numpy and random in each DataLoader worker from torch's per-worker seed."""
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


def make_loader(root, batch_size, workers=4, seed=SEED, device="cpu", num_samples=None):
    """DataLoader over an image folder: shuffled (seeded), sharded by rank under torchrun,
    decoding on `workers` processes, pinned memory when the GPU is used.

    `num_samples` draws that many samples with replacement (for benchmarks on small folders).
    """
    dataset = ImageFolderDataset(root)
    rank, world_size, _ = distributed_context()
    generator = torch.Generator().manual_seed(seed)
    if world_size > 1:
        sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed)
    else:
        sampler = RandomSampler(dataset, replacement=num_samples is not None, num_samples=num_samples,
                                generator=generator)
    return DataLoader(
        dataset, batch_size=batch_size, sampler=sampler, num_workers=workers, collate_fn=collate_uint8,
        pin_memory=torch.device(device).type == "cuda", drop_last=True, worker_init_fn=seed_worker,
        generator=generator, persistent_workers=workers > 0, prefetch_factor=4 if workers > 0 else None,
    )


class CudaPrefetcher:
    """Iterate a loader while the next batch is already being copied to the GPU on a side
    stream; on the CPU it simply moves batches to `device`."""

    def __init__(self, loader, device):
        self.loader, self.device = loader, torch.device(device)

    def _to_device(self, batch):
        images, labels = batch
        move = lambda t: t.to(self.device, non_blocking=True)
        images = move(images) if torch.is_tensor(images) else [move(i) for i in images]
        return images, move(labels)

    def __iter__(self):
        if self.device.type != "cuda":
            for batch in self.loader:
                yield self._to_device(batch)
            return
        stream = torch.cuda.Stream(self.device)
        batches = iter(self.loader)
        upcoming = None
        for batch in batches:
            with torch.cuda.stream(stream):
                ready = self._to_device(batch)
            if upcoming is not None:
                yield upcoming
            torch.cuda.current_stream(self.device).wait_stream(stream)
            for t in (ready[0] if isinstance(ready[0], list) else [ready[0]]) + [ready[1]]:
                t.record_stream(torch.cuda.current_stream(self.device))
            upcoming = ready
        if upcoming is not None:
            yield upcoming

    def __len__(self):
        return len(self.loader)


def training_batches(root, batch_size, epochs=1, workers=4, seed=SEED, device=None, num_samples=None):
    """Yield (epoch, augmented float batch on `device`, labels): the loop to train with.

    Every rank and epoch gets its own derived augmentation seed, so runs repeat exactly.
    """
    rank, world_size, local_rank = distributed_context()
    if device is None:
        device = f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    augmentation = build_augmentation().to(device)
    loader = make_loader(root, batch_size, workers, seed, device, num_samples)
    for epoch in range(epochs):
        if isinstance(loader.sampler, DistributedSampler):
            loader.sampler.set_epoch(epoch)
        torch.manual_seed(derive_seed(seed, rank, epoch))
        for images, labels in CudaPrefetcher(loader, device):
            with torch.no_grad():
                batch = augment_batch(augmentation, images, device)
            # Yield outside no_grad: grad mode is global, and the caller trains with it on.
            yield epoch, batch, labels


def _save(args):
    files = list_image_files(args.images)
    if not files:
        raise SystemExit(f"no image files ({', '.join(IMAGE_EXTENSIONS)}) under {args.images}")
    images = [decode_image(f) for f in files]
    out, records = augment_images(images, seed=args.seed, device=args.device or "cpu")
    arrays = {"images": out} if not isinstance(out, list) else {f"image_{i:05d}": o for i, o in enumerate(out)}
    for (name, position), record in zip(STEPS, records):
        for key, value in record.items():
            arrays[f"params.step{position + 1}_{name}.{key}"] = value
    np.savez(args.save, **arrays)
    print(f"saved {len(images)} augmented images and their sampled parameters to {args.save}")


def bench_rates(root, batch_size, batches=20, warmup=3, runs=1, workers=4, seed=SEED, device=None,
                progress=None):
    """Images/s of the training loop (decode on workers, copy, augment) over `runs` stretches
    of `batches` batches after `warmup`; --bench prints one, the workbench's estimate several."""
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    # Samples to spare: the workers keep decoding (and competing for the cores) until the last
    # timed batch, as they do in training; at the very end of a loader they would be idle.
    spare = 4 * max(1, workers) + 1
    total = batch_size * (warmup + batches * runs + spare)
    loop = training_batches(root, batch_size, epochs=1, workers=workers, seed=seed, device=device, num_samples=total)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else None
    try:
        return timed_rates(loop, lambda batch: len(batch[1]), batches, warmup, runs, sync, progress)
    finally:
        loop.close()  # stops the decoding processes now, not whenever the loader is collected


def _bench(args):
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    batches = bench_batches(args.batch_size, args.batches)
    rates = bench_rates(args.images, args.batch_size, batches, args.warmup, args.runs, args.workers, args.seed, device)
    print(f"device: {device}, batch size: {args.batch_size}, workers: {args.workers}, "
          f"{args.runs} run(s) of {batches} batches after {args.warmup} warm-up")
    print("runs (images/s): " + ", ".join(f"{r:.1f}" for r in rates))
    print(f"images/s: {median(rates):.1f}")


def _train(args):
    rank, world_size, _ = distributed_context()
    if world_size > 1:
        torch.distributed.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    seen = 0
    for epoch, images, labels in training_batches(args.images, args.batch_size, args.epochs, args.workers,
                                                  args.seed, args.device):
        # Your training step goes here: loss = criterion(model(images), labels) ...
        seen += labels.shape[0]
    print(f"rank {rank}/{world_size}: {seen} augmented images over {args.epochs} epoch(s)")
    if world_size > 1:
        torch.distributed.destroy_process_group()


def main(argv=None):
    parser = contract_parser(__doc__.splitlines()[0], SEED, min(4, os.cpu_count() or 1), "decoding processes")
    args = parser.parse_args(argv)
    if args.save:
        _save(args)
    elif args.bench:
        _bench(args)
    else:
        _train(args)


if __name__ == "__main__":
    main()
'''
