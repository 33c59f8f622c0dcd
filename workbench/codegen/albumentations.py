"""Emit an Albumentations script for a chain: `build_compose()` plus a multi-worker loader and CLI."""
from __future__ import annotations

from ..chain import Chain
from ..errors import UnsupportedOpError
from .albumentations_template import BODY, HEADER, IMPORTS
from .literals import call, comment, identifier, literal
from .runtime_source import runtime_source


def albumentations_transform_call(step) -> str:
    """Source of the Albumentations transform for one validated step.

    Example:
        >>> from workbench.chain import Step
        >>> albumentations_transform_call(Step.create("HorizontalFlip", p=0.5))
        'A.HorizontalFlip(p=0.5)'
    """
    spec = step.spec
    if spec.albumentations is None:
        why = spec.unsupported.get("albumentations", "")
        raise UnsupportedOpError(f"{spec.name} cannot run on Albumentations{f' ({why})' if why else ''}; "
                                 f"backends that support it: {', '.join(spec.backends) or 'none'}")
    kwargs = dict(spec.albumentations.args(step.params))
    kwargs["p"] = float(step.p)
    return call(f"A.{identifier(spec.albumentations.transform)}", kwargs)


def emit_albumentations(chain: Chain) -> str:
    """The whole script as text (`export_chain` syntax-checks it)."""
    enabled = chain.enabled_steps()
    lines = [HEADER, comment(f"Chain (seed {chain.seed}), {len(chain.steps)} step(s):")]
    for i, step in enumerate(chain.steps):
        lines.append(comment(f"  {i + 1}. {step.describe()}"))
    lines += ["", IMPORTS, "", f"SEED = {literal(chain.seed)}",
              comment("(op name, position in the chain) of each enabled step, in order."),
              f"STEPS = {literal(tuple((identifier(s.op), i) for i, s in enabled))}",
              "", "",
              "def build_compose():",
              '    """The chain\'s enabled steps as one Albumentations pipeline (uint8 HWC in, per image);',
              '    seed it with `seed_transforms`."""',
              "    return A.Compose(["]
    for i, step in enabled:
        lines.append("        " + comment(f"{i + 1}. {step.describe()}"))
        lines.append(f"        {albumentations_transform_call(step)},")
    lines += ["    ])", "", "", runtime_source(), "", BODY]
    return "\n".join(lines)
