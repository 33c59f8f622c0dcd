"""Turn a torchvision `transforms.v2` pipeline into a chain: each transform becomes the op that
expresses it with the same settings (read from the instance, torchvision 0.26's attributes);
containers become group steps; what no op can express is listed in `chain.unmapped` with the
reason. torchvision is imported only when a pipeline is imported.

Value conventions: the workbench works on images in [0, 1] (after ToImage/ToDtype(float,
scale=True)); torchvision's RandomSolarize threshold is in the image's own range, so a threshold
above 1 is read as a uint8 level (divided by 255, noted).

Example:
    >>> from torchvision.transforms import v2  # doctest: +SKIP
    >>> import workbench as wb  # doctest: +SKIP
    >>> pipeline = v2.Compose([v2.RandomHorizontalFlip(), v2.ColorJitter(0.4)])  # doctest: +SKIP
    >>> chain = wb.Chain.from_torchvision(pipeline)  # doctest: +SKIP
    >>> [(s.op, s.params) for s in chain.steps]  # doctest: +SKIP
    [('HorizontalFlip', {}), ('Brightness', {'factor': [0.6, 1.4]})]
"""
from __future__ import annotations

import numbers
from typing import Any

from ..errors import ChainError, WorkbenchError
from ..model import ChainModel, Step
from ..ops import REGISTRY
from .walker import Child, Imported, Library, child_step, every_child_mapped, group_dict, import_chain, \
    leaf_positions, read_as_op

# Transforms that only change the container, the dtype or the layout: every export already
# delivers float tensors in [0, 1] in its engine's layout.
LAYOUT_ONLY = {
    "ToImage": "wraps the input as an image tensor", "ToTensor": "converts to a CHW float tensor",
    "PILToTensor": "converts to a CHW tensor", "ToDtype": "converts the dtype (the chain works in [0, 1] floats)",
    "ConvertImageDtype": "converts the dtype", "ToPureTensor": "unwraps the tv_tensor", "Identity": "does nothing",
    "ToPILImage": "converts to PIL", "RGB": "converts grey images to RGB (the chain's images are RGB already)",
    # Target housekeeping: the chain keeps boxes as pixel [x1, y1, x2, y2], clips them to the image and
    # drops those below its min_visibility after every step (chain.targets).
    "ClampBoundingBoxes": "clips boxes to the image", "ClampKeyPoints": "clips keypoints to the image",
    "SanitizeBoundingBoxes": "drops degenerate boxes", "SanitizeKeyPoints": "drops keypoints outside the image",
    "ConvertBoundingBoxFormat": "changes the boxes' format", "SetClampingMode": "sets how boxes are clipped",
}
CONTAINERS = ("Compose", "RandomApply", "RandomChoice", "RandomOrder")

# The transforms no op runs (every other image transform of torchvision 0.28's v2 maps, tested in
# tests/test_torchvision_parity.py): the op nearest to each.
_NEAREST = {
    "AugMix": "TorchvisionTrivialAugmentWide (torchvision's ops and bins, one chain; AugMix blends several chains "
              "of them with the image)", "Pad": "PadIfNeeded (pads up to a size; v2.Pad adds fixed margins)",
    "FiveCrop": "CenterCrop (one crop per image)", "TenCrop": "CenterCrop (one crop per image)",
    "LinearTransformation": "Normalize (per channel)", "Lambda": "none: a user function cannot be read",
    "UniformTemporalSubsample": "none: it picks video frames",
}


def chain_from_torchvision(pipeline: Any, seed: int | None = None, strict: bool = False,
                           chain_type: type[ChainModel] = ChainModel) -> ChainModel:
    """The chain for a torchvision v2 pipeline, see `Chain.from_torchvision`."""
    return import_chain(_top(pipeline), LIBRARY, chain_type(seed=0 if seed is None else seed), "from_torchvision",
                        strict)


def leaf_transforms(pipeline: Any) -> list[str]:
    """Positions ("1", "2.1", ...) of the transforms in `pipeline` that an import maps one by
    one, numbered as `chain.unmapped` numbers them: what the import coverage counts.

    Example:
        >>> from torchvision.transforms import v2  # doctest: +SKIP
        >>> choice = v2.RandomChoice([v2.RandomHorizontalFlip(), v2.RandomInvert()])  # doctest: +SKIP
        >>> leaf_transforms(v2.Compose([choice]))  # doctest: +SKIP
        ['1.1', '1.2']
    """
    return leaf_positions(_top(pipeline), LIBRARY)


def _top(pipeline: Any) -> list:
    try:
        import torch.nn as nn
        from torchvision.transforms import v2  # noqa: F401 - imported here only, as the docstring says
    except ImportError as exc:
        raise WorkbenchError(f"importing a torchvision pipeline needs torchvision (pip install torchvision): {exc}") \
            from None
    name = type(pipeline).__name__
    if isinstance(pipeline, (list, tuple)):
        return list(pipeline)
    if name == "Compose":
        return list(pipeline.transforms)
    if isinstance(pipeline, nn.Module) or callable(pipeline):
        return [pipeline]
    raise WorkbenchError(f"from_torchvision takes a v2.Compose, a list of transforms or one transform; got {name}")


def describe(transform: Any) -> str:
    p = getattr(transform, "p", None)
    if isinstance(p, numbers.Real) and not isinstance(p, bool):
        return f"v2.{type(transform).__name__}(p={float(p):g})"
    return f"v2.{type(transform).__name__}()"


def _leaf(transform: Any, notes: list[str]) -> Step:
    composite = COMPOSITES.get(type(transform).__name__)
    if composite is not None:
        return composite(transform, notes)
    op, params, p = transform_to_op(transform, notes)
    return Step.create(op, p=p, **params)


def photometric_distort(t: Any, notes: list[str]) -> Step:
    """v2.RandomPhotometricDistort (SSD's) as the group of steps it runs, each of its parts gated by
    its own coin of probability p: brightness; then contrast before saturation and hue, or after
    them (a fair coin per image: a OneOf of the two orders); then a channel permutation.

    Example:
        >>> from types import SimpleNamespace
        >>> t = SimpleNamespace(brightness=(0.875, 1.125), contrast=(0.5, 1.5), saturation=(0.5, 1.5),
        ...                     hue=(-0.05, 0.05), p=0.5)
        >>> group = photometric_distort(t, [])
        >>> [s["op"] for s in group.to_dict()["steps"]]
        ['Brightness', 'OneOf', 'ChannelShuffle']
    """
    p = float(t.p)

    def part(op: str, param: str, value) -> Step:
        return Step.create(op, p=p, **{param: [float(value[0]), float(value[1])]})

    def contrast():
        return part("Contrast", "factor", t.contrast)

    def colour():
        return [part("Saturation", "factor", t.saturation), part("Hue", "shift", t.hue)]

    orders = group_dict("OneOf", 1.0, {"weights": [1.0, 1.0]},
                        [Step.create("Sequential", steps=[contrast(), *colour()]),
                         Step.create("Sequential", steps=[*colour(), contrast()])])
    notes.append("v2.RandomPhotometricDistort: imported as the group of steps it runs (brightness; contrast before "
                 "or after saturation and hue, a coin per image; a channel permutation), each gated by its p")
    return Step.from_dict(group_dict("Sequential", 1.0, {}, [part("Brightness", "factor", t.brightness),
                                                             Step.from_dict(orders),
                                                             Step.create("ChannelShuffle", p=p)]))


# Transforms that are several ops in a fixed arrangement: imported as that group.
COMPOSITES = {"RandomPhotometricDistort": photometric_distort}


def mixup_or_cutmix(steps: list[Step], weights: list[float]) -> Step:
    """RandomChoice([MixUp, CutMix]) (either order), as torchvision's classification reference mixes its
    batches: one TorchvisionMixUpOrCutMix step (a group cannot hold a step that mixes the batch).

    Example:
        >>> from workbench.model import Step
        >>> steps = [Step.from_dict({"op": op, "params": {"alpha": a}})
        ...          for op, a in (("TorchvisionCutMix", 1.0), ("TorchvisionMixUp", 0.2))]
        >>> mixup_or_cutmix(steps, [0.5, 0.5]).params
        {'mixup_alpha': 0.2, 'cutmix_alpha': 1.0, 'mixup_share': 0.5, 'cutmix_first': True}
    """
    alpha = {step.op: step.params["alpha"] for step in steps}
    cutmix_first = steps[0].op == "TorchvisionCutMix"
    share = weights[1 if cutmix_first else 0] / sum(weights)
    return Step.from_dict({"op": "TorchvisionMixUpOrCutMix", "params": {
        "mixup_alpha": alpha["TorchvisionMixUp"], "cutmix_alpha": alpha["TorchvisionCutMix"], "mixup_share": share,
        "cutmix_first": cutmix_first}})


def _container(transform: Any, position: str, children: list[Child], imported: Imported):
    """RandomApply -> Sequential group (gated together), RandomChoice -> OneOf (of MixUp and CutMix:
    mixup_or_cutmix), RandomOrder -> SomeOf(n = all, no replacement); ValueError when a child does not
    map (then listed)."""
    name = type(transform).__name__
    if not every_child_mapped(children):
        raise ValueError(f"{name} holds transforms that do not map (see the entries under this position), so the "
                         "group cannot be kept")
    steps = [child_step(child) for child in children]
    if name == "RandomApply":
        p = float(transform.p)
        if len(steps) == 1 and steps[0].p == 1.0:  # one transform: its own p says it
            data = steps[0].to_dict()
            data["p"] = p
            return Step.from_dict(data)
        data = group_dict("Sequential", p, {}, steps)
    elif name == "RandomChoice" and sorted(step.op for step in steps) == ["TorchvisionCutMix", "TorchvisionMixUp"]:
        return mixup_or_cutmix(steps, [float(w) for w in transform.p])
    elif name == "RandomChoice":
        data = group_dict("OneOf", 1.0, {"weights": [float(w) for w in transform.p]}, steps)
    else:
        data = group_dict("SomeOf", 1.0, {"n": len(steps), "replace": False, "weights": [1.0] * len(steps)}, steps)
        imported.notes.append(f"{position} v2.RandomOrder: applies all its transforms in a random order per call; "
                              "the SomeOf group draws the order per image")
    try:
        return Step.from_dict(data, index=int(position.split(".")[0]))
    except ChainError as exc:
        raise ValueError(f"{name} would be a {data['op']} group step, which this workbench cannot build ({exc})") \
            from None


LIBRARY = Library(
    children=lambda t: list(t.transforms) if type(t).__name__ in CONTAINERS else None,
    layout_only=lambda t: type(t).__name__ in LAYOUT_ONLY,
    opened=lambda t: type(t).__name__ == "Compose",
    group=_container, leaf=_leaf, describe=describe)


# ----- one transform --------------------------------------------------------------------
def transform_to_op(transform: Any, notes: list[str] | None = None) -> tuple[str, dict, float]:
    """(op name, params, p) for one torchvision v2 transform, read by the inverse on the op's spec
    (`OpSpec.from_torchvision`); ValueError with the reason when no op expresses it."""
    notes = [] if notes is None else notes
    name = type(transform).__name__
    candidates = [(spec.name, spec.from_torchvision.read) for spec in REGISTRY.values()
                  if spec.from_torchvision is not None
                  and name in (spec.from_torchvision.transform, *spec.from_torchvision.also_imports)]
    if not candidates:
        nearest = _NEAREST.get(name, "")
        hint = f"; {nearest[len('none: '):]}" if nearest.startswith("none: ") else \
            f"; the nearest op is {nearest}" if nearest else ""
        raise ValueError(f"no workbench op runs v2.{name}{hint}; see workbench.list_ops() and docs/ops.md")
    op, params = read_as_op(transform, candidates, notes)
    # A transform without p always applies.
    return op, params, float(getattr(transform, "p", 1.0))
