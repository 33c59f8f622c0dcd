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

Labels: a batch mixing step (MixUp, CutMix) blends each sample with a partner of its batch
and makes the labels float soft targets (one row of class weights per sample) mixed with the
same weights; the training loader yields them, `augment_images(labels=...)` returns them,
and --save writes them as "labels" (each file's label being its index).
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


# Steps that blend samples of one batch (MixUp, CutMix): they mix the labels too.
MIXING_MODULES = (K.RandomMixUpV2, K.RandomCutMixV2)


def mix_draws(module):
    """A mixing step's per-sample draws: `partner` (batch index), `weight` (the partner's share
    of image and label) and, for CutMix, the pasted `box` [x0, y0, x1, y1) in pixels."""
    params = module._params
    draws = {"batch_prob": params["batch_prob"]}
    if "mixup_pairs" in params:
        draws.update(partner=params["mixup_pairs"], weight=params["mixup_lambdas"])
        return draws
    # CutMix, one box per sample (num_mix=1); far corners are inclusive, so an empty box has size 0.
    corners = params["crop_src"][0]
    x0, y0 = corners[:, 0, 0], corners[:, 0, 1]
    width, height = corners[:, 1, 0] - x0 + 1, corners[:, 2, 1] - y0 + 1
    draws.update(partner=params["mix_pairs"][0],
                 weight=width * height / (params["image_shape"][0] * params["image_shape"][1]),
                 box=torch.stack([x0, y0, x0 + width, y0 + height], dim=1))
    return draws


def mix_labels(labels, draws):
    """Soft targets mixed as the images were: (1 - w) * own + w * the partner's, w = 0 for
    samples the step left alone."""
    weight = (draws["weight"] * draws["batch_prob"]).to(labels.device, labels.dtype)[:, None]
    return labels * (1 - weight) + labels.index_select(0, draws["partner"].to(labels.device)) * weight


def soft_targets(labels, num_classes=None):
    """Labels as float32 soft targets, one row per sample: class ids become one-hot rows (as many
    classes as the largest id + 1 unless `num_classes`); (N, C) rows are taken as they are."""
    labels = torch.as_tensor(np.asarray(labels) if not torch.is_tensor(labels) else labels)
    if labels.dim() == 2:
        return labels.float()
    count = int(labels.max()) + 1 if num_classes is None else num_classes
    return torch.nn.functional.one_hot(labels.long(), count).float()


def mixes_batch(augmentation):
    """Whether any step blends samples of the batch (then labels become mixed soft targets)."""
    return any(isinstance(module, MIXING_MODULES) for module in augmentation)


def apply_steps(steps, batch, records=None, labels=None):
    """Run `steps` in order on a float NCHW batch; append each step's draws to `records`.

    Mixing steps mix `labels` (soft targets, see soft_targets) as they mix the images; with
    `labels` the result is (batch, labels), else the batch."""
    for module in steps:
        # Drawn on the CPU (see place), applied where the batch is.
        batch = module(batch, params=on_device(module.forward_parameters(batch.shape), batch.device))
        draws = mix_draws(module) if isinstance(module, MIXING_MODULES) else None
        if records is not None:
            records.append(sampled_params(module) if draws is None else
                           {k: v.detach().cpu().numpy() for k, v in draws.items()})
        if labels is not None and draws is not None:
            labels = mix_labels(labels, draws)
    return batch if labels is None else (batch, labels)


def place(augmentation, device):
    """The chain's modules on `device`, drawing their random values on the CPU generator: the
    same draws on every device, and no step mixes CPU and GPU tensors (Kornia keeps some of
    its draws on the CPU whatever the device: MixUp's pairs, RandAugment's magnitudes)."""
    augmentation = augmentation.to(device)
    for module in augmentation.modules():
        if hasattr(module, "set_rng_device_and_dtype"):
            module.set_rng_device_and_dtype(torch.device("cpu"), torch.get_default_dtype())
    return augmentation


def on_device(params, device):
    """Sampled parameters (a dict of tensors, or a policy's list of Kornia ParamItems) on `device`."""
    if torch.is_tensor(params):
        return params.to(device, non_blocking=True)
    if isinstance(params, dict):
        return {key: on_device(value, device) for key, value in params.items()}
    if isinstance(params, list):
        return [on_device(item, device) for item in params]
    if isinstance(params, tuple) and hasattr(params, "_replace"):  # kornia's ParamItem(name, data)
        return params._replace(data=on_device(params.data, device))
    return params


def to_float(images, device):
    """uint8 NCHW (or CHW) on any device -> float32 in [0, 1] on `device`."""
    return images.to(device, non_blocking=True).float().div_(255.0)


def augment_batch(augmentation, images, device, records=None, labels=None):
    """Augment a uint8 NCHW tensor, or a list of uint8 CHW tensors of mixed sizes.

    Mixed sizes: the steps before HEAD_STEPS run per image (the last of them fixes the
    size), then the remaining steps run on the stacked batch. With `labels` (soft targets)
    the result is (batch, mixed labels).
    """
    if torch.is_tensor(images):
        return apply_steps(augmentation, to_float(images, device), records, labels)
    head, tail = augmentation[:HEAD_STEPS], augmentation[HEAD_STEPS:]
    for (name, position), module in zip(STEPS, head):
        if isinstance(module, MIXING_MODULES):  # run per image, it would mix each image with itself
            raise ValueError(f"step {position + 1} ({name}) mixes samples of one batch, but the images differ "
                             "in size there; add a Resize or a crop (CenterCrop, RandomResizedCrop) before it")
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
        out = [o[0] for o in outputs]  # no step made the sizes equal (HEAD_STEPS covers all steps)
        return out if labels is None else (out, labels)
    return apply_steps(tail, torch.cat(outputs), records, labels)


def augment_images(images, seed=SEED, device="cpu", labels=None):
    """Augment HxWx3 uint8 arrays in the given order with `seed`, as the workbench preview does.

    Returns (images, params): images as an NxHxWxC float32 array (a list when sizes differ),
    params as one dict per enabled step of arrays with the sample index first. Given `labels`
    (class ids, or soft targets N x classes), also the labels as float32 soft targets, mixed
    by the mixing steps (MixUp, CutMix) with the weights they report: (images, params, labels).
    """
    device = torch.device(device)
    targets = None if labels is None else soft_targets(labels).to(device)
    augmentation = place(build_augmentation(), device)
    tensors = [torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1) for image in images]
    batch = torch.stack(tensors) if len({t.shape for t in tensors}) == 1 else tensors
    cuda = [device] if device.type == "cuda" else []
    records = []
    # fork_rng: seeding here must not change the caller's random stream.
    with torch.random.fork_rng(devices=cuda), torch.no_grad():
        torch.manual_seed(seed)
        out = augment_batch(augmentation, batch, device, records, targets)
    if targets is not None:
        out, targets = out
    if isinstance(out, list):
        result = [o.permute(1, 2, 0).cpu().numpy() for o in out], records
    else:
        result = out.permute(0, 2, 3, 1).contiguous().cpu().numpy(), records
    return result if targets is None else (*result, targets.cpu().numpy())


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

    Labels are class ids; when a step mixes the batch (MixUp, CutMix) they are float soft
    targets (batch x classes) mixed like the images, which torch's cross_entropy takes as
    they are. Every rank and epoch gets its own derived augmentation seed, so runs repeat exactly.
    """
    rank, world_size, local_rank = distributed_context()
    if device is None:
        device = f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    augmentation = place(build_augmentation(), device)
    loader = make_loader(root, batch_size, workers, seed, device, num_samples)
    mixing = mixes_batch(augmentation)
    num_classes = max(1, len(loader.dataset.classes))
    for epoch in range(epochs):
        if isinstance(loader.sampler, DistributedSampler):
            loader.sampler.set_epoch(epoch)
        torch.manual_seed(derive_seed(seed, rank, epoch))
        for images, labels in CudaPrefetcher(loader, device):
            with torch.no_grad():
                if mixing:
                    batch, labels = augment_batch(augmentation, images, device,
                                                  labels=soft_targets(labels, num_classes))
                else:
                    batch = augment_batch(augmentation, images, device)
            # Yield outside no_grad: grad mode is global, and the caller trains with it on.
            yield epoch, batch, labels


def _save(args):
    files = list_image_files(args.images)
    if not files:
        raise SystemExit(f"no image files ({', '.join(IMAGE_EXTENSIONS)}) under {args.images}")
    images = [decode_image(f) for f in files]
    # A mixing chain also saves its mixed labels, the label of each file being its index, so
    # that each row shows which files were mixed in and by how much (as the workbench preview).
    labels = np.arange(len(images)) if mixes_batch(build_augmentation()) else None
    out, records, *mixed = augment_images(images, seed=args.seed, device=args.device or "cpu", labels=labels)
    arrays = {"images": out} if not isinstance(out, list) else {f"image_{i:05d}": o for i, o in enumerate(out)}
    if mixed:
        arrays["labels"] = mixed[0]
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
