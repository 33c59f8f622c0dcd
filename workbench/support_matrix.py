"""The support matrix (docs/ops.md), generated from the op registry.

Example:
    >>> text = support_matrix_markdown()
    >>> "| Rotate | geometric | yes | yes |" in text
    True
"""
from __future__ import annotations

from .ops import GROUPS, REGISTRY
from .ops.spec import BACKEND_DEVICES, BACKEND_NAMES

HEADER = """# Ops and backends

Generated from the op registry by `workbench ops --markdown -o docs/ops.md`; a test fails
when this file is out of date. Parity: with ranges collapsed and p = 1, backends agree on
the sample photographs within the stated mean absolute error (in grey levels of 255) and
PSNR, `border` pixels from the edge left out (see `tests/test_parity.py`).

Targets (`chain.run(images, masks=..., boxes=..., keypoints=...)`): "moved" ops move masks
(nearest pixel), boxes (the box around the moved corners, clipped, dropped below the chain's
`min_visibility`) and keypoints (kept, flagged when they leave the image) as the pixels move,
from each sample's reported draws, alike on every backend; "no" ops refuse targets, saying why.

Devices: Kornia and DALI run every op they support on the CPU and on an NVIDIA GPU
(`device="cuda"`; DALI's GPU operators, Kornia on CUDA tensors with its draws made on the CPU
so that both devices draw alike), except the ops marked "GPU only", which that backend runs on
its GPU alone (`run`, the preview, the exported script and the estimate refuse them on its CPU,
saying why); Albumentations runs on the CPU only. Every op's DALI GPU graphs are defined in CI
and every op runs on CUDA where a GPU is present (`tests/test_gpu_paths.py`).
"""


def _cell(ok: bool, gpu_only: bool = False) -> str:
    return ("GPU only" if gpu_only else "yes") if ok else "no"


def targets_text(spec) -> str:
    """What the op does to masks, boxes and keypoints (the matrix's targets column).

    Example:
        >>> from workbench.ops import get_op
        >>> targets_text(get_op("Rotate")), targets_text(get_op("Brightness"))
        ('moved', 'left alone')
    """
    rule = spec.targets
    if rule.unsupported:
        return "no"
    if rule.geometry is not None or rule.field is not None:
        return "moved"
    if rule.erase is not None:
        return "left alone; masks marked on request"
    if rule.mix is not None:
        return "mixed"
    return "left alone"


def support_matrix_markdown() -> str:
    """Markdown: a matrix of ops by backend, then each op's parameters, p and notes."""
    columns = [f"{b} ({', '.join(BACKEND_DEVICES[b])})" for b in BACKEND_NAMES]
    lines = [HEADER, "| op | family | " + " | ".join(columns) + " | parity (MAE, PSNR) | masks, boxes, keypoints |",
             "|---|---|" + "---|" * len(BACKEND_NAMES) + "---|---|"]
    for spec in REGISTRY.values():
        shared = len(spec.backends) > 1
        if not shared:
            parity = "-"
        elif spec.parity.mae * 255 < 0.01:
            parity = "exact (float rounding)"
        else:
            parity = f"<= {spec.parity.mae * 255:.2g}/255, >= {spec.parity.psnr:g} dB, border {spec.parity.border} px"
        lines.append(f"| {spec.name} | {spec.family} | "
                     + " | ".join(_cell(spec.supports(b), b in spec.gpu_only) for b in BACKEND_NAMES)
                     + f" | {parity} | {targets_text(spec)} |")
    lines += ["", "## Groups", "",
              "A group is a step that holds steps (`steps`) and chooses per sample which of them run, on every "
              "backend that runs all its children (Kornia runs each child on the samples that chose it, DALI under "
              "conditional execution, Albumentations per image). The group's `p` gates it per sample; a chosen "
              "child still applies with its own `p`. A child that changes the size (a crop, a resize, a pad, a "
              "drawn size) leaves the samples that ran it at sizes of their own (the chain runs image by image "
              "from the group until a step fixes the size); Normalize, the policies and batch mixing cannot be "
              "inside a group.", ""]
    for spec in GROUPS.values():
        lines.append(f"- **{spec.name}**: {spec.doc}"
                     + "".join(f" `{param.name}`: {param.doc}." for param in spec.params))
    lines.append("")
    for spec in REGISTRY.values():
        lines += [f"## {spec.name}", "", spec.doc, ""]
        p_note = f"always 1 ({spec.always_applies_why})" if spec.always_applies else f"default {spec.default_p:g}"
        lines.append(f"- backends: {', '.join(spec.backends)}; p: {p_note}")
        for param in spec.params:
            lines.append(f"- `{param.name}`: {param.doc}; default `{spec.defaults()[param.name]}`"
                         + _range_text(param))
        if spec.targets.unsupported:
            lines.append("- targets: `run` refuses masks, boxes and keypoints with this op "
                         f"({spec.targets.unsupported})")
        elif spec.targets.geometry is not None or spec.targets.field is not None:
            mover = spec.targets.geometry or spec.targets.field
            lines.append("- targets: masks, boxes and keypoints move as the pixels do, from each sample's draws "
                         f"(`{mover.__name__}` in workbench/runtime/targets.py)")
        for backend in BACKEND_NAMES:
            if not spec.supports(backend):
                why = spec.unsupported.get(backend, "no lowering")
                lines.append(f"- not on {backend} ({why}): `run` and `export` refuse it there")
            elif backend in spec.gpu_only:
                lines.append(f"- {backend}: on the GPU only ({spec.gpu_only[backend]}): `run`, the preview, the "
                             "exported script and the estimate refuse it with device \"cpu\"")
        if spec.dali is not None and spec.dali.decodes_region:
            after = " (or right after a leading Resize)" if spec.dali.follows_resize else ""
            lines.append(f"- DALI training loader: as the chain's first step{after} it decodes only the pixels its "
                         "window needs (region decoding), the window drawn from the file's header")
        for label, lowering in (("DALI", spec.dali), ("Albumentations", spec.albumentations)):
            if lowering is not None and lowering.note:
                lines.append(f"- {label}: {lowering.note}")
        lines.append("")
    return "\n".join(lines)


def _range_text(param) -> str:
    if hasattr(param, "options") and param.options:
        return f"; one of {', '.join(param.options)}"
    lo, hi = getattr(param, "lo", None), getattr(param, "hi", None)
    if lo is None or param.ui == "checkbox":
        return ""
    return f"; within [{lo:g}, {hi:g}]"
