"""The app's preview runner for Albumentations (the Kornia and DALI ones cache step states)."""
from __future__ import annotations

from ..plans import box_reading_op
from .run import run_chain


class AlbumentationsPreview:
    """The app's preview runner for Albumentations: always on the CPU, whatever device the
    other backend of a side-by-side view uses. It reruns the whole chain (Albumentations has
    no batch state worth caching: each transform reseeds from the chain's seed and position).

    Example:
        >>> import workbench as wb
        >>> res = AlbumentationsPreview().run(wb.Chain().add("Normalize"), wb.load_images()[:1], "cuda")
        >>> res.device, res.images[0].dtype.name
        ('cpu', 'float32')
    """

    resumed_at = 0

    def run(self, chain, images, device: str = "cpu", seed: int | None = None, boxes=None):
        return run_chain(chain, images, backend="albumentations", device="cpu", seed=seed,
                         **({} if boxes is None else {"boxes": boxes}))

    def run_draws(self, chain, images, device: str = "cpu", seeds=(None,), boxes=None) -> list:
        """`run` once per seed of `seeds`, in order; `boxes`: see StepStateCache.run_draws."""
        return [self.run(chain, images, device, seed, boxes if box_reading_op(chain) else None) for seed in seeds]
