"""The Chain users hold: the chain model (workbench/model.py) plus the verbs they call on it.

Each verb is one line that hands the chain to the engine that implements it: `run` to the
backends, `export` to the code emitters, `estimate` and `compare_backends` to the throughput
estimate, `from_albumentations` / `from_kornia` / `from_torchvision` to the importers. The
engines only ever see the model, so every import arrow points down: model <- engines <- here.

Example:
    >>> import workbench as wb
    >>> chain = wb.Chain.from_dict({"seed": 7, "steps": [{"op": "HorizontalFlip", "p": 0.5}]})
    >>> wb.Chain.from_dict(chain.to_dict()) == chain, type(chain.copy()).__name__
    (True, 'Chain')
"""
from __future__ import annotations

import os
from typing import Any

from .backends import RunResult, run_chain
from .codegen import export_chain
from .estimate import Comparison, Estimate, compare_backends, estimate
from .importers.albumentations import chain_from_albumentations
from .importers.kornia import chain_from_kornia
from .importers.torchvision import chain_from_torchvision
from .model import FORMAT_NAME, FORMAT_VERSION, MAX_FILE_BYTES, MAX_SEED, MAX_STEPS, ChainModel, Step

__all__ = ["Chain", "Step", "FORMAT_NAME", "FORMAT_VERSION", "MAX_FILE_BYTES", "MAX_SEED", "MAX_STEPS"]


class Chain(ChainModel):
    """An ordered list of steps plus the seed that makes its random draws reproducible, and
    what can be done with it: run it, export it, estimate its throughput, import it.

    Example:
        >>> chain = Chain(seed=3).add("Rotate", degrees=[-10, 10]).add("Brightness", factor=[0.9, 1.1])
        >>> [s.op for s in chain.steps]
        ['Rotate', 'Brightness']
    """

    # ----- importers ------------------------------------------------------------------
    @classmethod
    def from_albumentations(cls, pipeline: Any, seed: int | None = None, strict: bool = False) -> "Chain":
        """A chain from an Albumentations `Compose` (or a list of transforms), to preview it
        beside the original and export it to Kornia or DALI for the GPU.

        Every transform becomes the op that expresses it with the same settings; the ones
        no op can express are left out and listed in `chain.unmapped` (position, transform,
        reason), with a warning (or a WorkbenchError when `strict`). The seed is the
        Compose's when it has one.

        Example:
            >>> import albumentations as A
            >>> chain = Chain.from_albumentations(A.Compose([A.Normalize()]))
            >>> chain.steps[0].op, chain.unmapped
            ('Normalize', [])
        """
        return chain_from_albumentations(pipeline, seed=seed, strict=strict, chain_type=cls)

    @classmethod
    def from_kornia(cls, pipeline: Any, seed: int | None = None, strict: bool = False) -> "Chain":
        """A chain from a Kornia `AugmentationSequential` (or an `nn.Sequential`, a list of
        augmentation modules, or one module); what no op expresses is listed in
        `chain.unmapped`, as `from_albumentations` does.

        Example:
            >>> import kornia.augmentation as K
            >>> chain = Chain.from_kornia(K.AugmentationSequential(K.RandomHorizontalFlip(p=0.5)))
            >>> [(s.op, s.p) for s in chain.steps], chain.unmapped
            ([('HorizontalFlip', 0.5)], [])
        """
        return chain_from_kornia(pipeline, seed=seed, strict=strict, chain_type=cls)

    @classmethod
    def from_torchvision(cls, pipeline: Any, seed: int | None = None, strict: bool = False) -> "Chain":
        """A chain from a torchvision `transforms.v2.Compose` (or a list of transforms, or one);
        torchvision is imported only here. Unmapped transforms are listed in `chain.unmapped`.

        Example:
            >>> from torchvision.transforms import v2  # doctest: +SKIP
            >>> Chain.from_torchvision(v2.Compose([v2.RandomHorizontalFlip()])).steps[0].op  # doctest: +SKIP
            'HorizontalFlip'
        """
        return chain_from_torchvision(pipeline, seed=seed, strict=strict, chain_type=cls)

    # ----- running, exporting, measuring ----------------------------------------------
    def run(self, images: Any, backend: str = "kornia", device: str = "cpu", seed: int | None = None,
            labels: Any = None, torch_compile: bool = False, masks: Any = None, boxes: Any = None,
            box_labels: Any = None, keypoints: Any = None, keypoints_visible: Any = None) -> RunResult:
        """Apply the chain to images; returns a RunResult with `.images`, `.params` and `.labels`.

        `labels`: one class id per image, or soft targets (one row of class weights per image);
        default: each image's own index. `.labels` are float32 soft targets, mixed by the batch
        mixing steps (MixUp, CutMix) with the partner and weight each sample reports.
        `torch_compile` (Kornia only): run the fused runs of steps through torch.compile, as the
        export's --compile does (the first call per image size compiles; same draws).

        Targets move with the pixels and come back as `.masks`, `.boxes`, `.box_labels`,
        `.keypoints` and `.keypoints_visible` (formats: workbench/targets.py; how each op moves
        them: its spec's TargetRule; the chain's `targets` settings: min_visibility, mask_fill,
        mark_erased, flip_pairs). `masks`: one H x W integer label map per image, or an N x H x W
        stack; `boxes`: per image (K, 4) pixel [x1, y1, x2, y2], with optional `box_labels`;
        `keypoints`: per image (K, 2) pixel [x, y], pixel centres at integers, with optional
        `keypoints_visible`. `wb.load_annotated` reads them from a COCO file and a mask folder.

        Example:
            >>> import workbench as wb
            >>> res = wb.Chain(seed=1).add("VerticalFlip", p=1.0).run(wb.load_images("sample_data")[:2])
            >>> res.images.dtype.name, len(res.params)
            ('float32', 2)
            >>> res = wb.Chain(seed=1).add("VerticalFlip", p=1.0).run(res.inputs[:1], boxes=[[[0, 0, 10, 20]]])
            >>> res.boxes[0].tolist(), res.inputs[0].shape[0]
            ([[0.0, 492.0, 10.0, 512.0]], 512)
        """
        return run_chain(self, images, backend=backend, device=device, seed=seed, labels=labels,
                         torch_compile=torch_compile, masks=masks, boxes=boxes, box_labels=box_labels,
                         keypoints=keypoints, keypoints_visible=keypoints_visible)

    def export(self, backend: str = "kornia", path: str | os.PathLike | None = None,
               folder: str | os.PathLike | None = None, overwrite: bool = False, form: str = "program",
               targets: bool = False, shards: bool = False, gpu_decode: bool = False) -> str:
        """Source code of a runnable, seeded script for `backend`; with `path`, also write it.
        `form="snippet"`: the chain alone in the library's own terms, seeded, to paste into a
        training script (Kornia: a torch.nn.Sequential of modules; Albumentations: an A.Compose);
        its docstring says what it reproduces of the preview.

        The program carries its chain, --save, --bench and the training loop over a folder; the
        rest only when asked, so that a small chain gives a small file: `targets` (masks, boxes and
        keypoints, --coco/--masks; on by itself for a step that reads boxes), `shards` (WebDataset
        tar shards, --shards; Kornia and DALI) and `gpu_decode` (the Kornia loader decodes JPEGs on
        the GPU). A program made without one says how to export it when asked for the feature.

        `path` is yours: absolute or relative to the current folder, missing folders created;
        an existing file is replaced only with `overwrite=True`. Give `folder` when the path
        comes from someone else (a text box, a file you loaded): it must then stay inside it.

        Example:
            >>> src = Chain(seed=5).add("HorizontalFlip").export("kornia")
            >>> "SEED = 5" in src
            True
        """
        return export_chain(self, backend=backend, path=path, folder=folder, overwrite=overwrite, form=form,
                            targets=targets, shards=shards, gpu_decode=gpu_decode)

    def estimate(self, backend: str = "kornia", device: str = "cpu", batch_size: int = 64, image_size: Any = None,
                 workers: int | None = None, **kwargs: Any) -> Estimate:
        """Measure the exported training loader's images/s on this machine, with a stage and a
        per-step breakdown (see `workbench.estimate.estimate` for every option).

        Example:
            >>> est = Chain().add("HorizontalFlip").estimate(batch_size=2, image_size=16, workers=0, runs=1,
            ...                                              batches=1, progress=False)
            >>> est.steps[0].op
            'HorizontalFlip'
        """
        return estimate(self, backend=backend, device=device, batch_size=batch_size, image_size=image_size,
                        workers=workers, **kwargs)

    def compare_backends(self, backends=None, **kwargs: Any) -> Comparison:
        """`estimate` on each backend in one call; returns a Comparison (`.fastest`, `.plot()`, `.advise()`)."""
        return compare_backends(self, backends, **kwargs)
