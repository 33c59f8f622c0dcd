"""Emit a DALI script for a chain: `augment(images)` as DALI operators plus pipelines and CLI."""
from __future__ import annotations

from ..chain import Chain
from ..errors import UnsupportedOpError
from ..ops.spec import DaliContext
from .dali_template import BODY, HEADER, IMPORTS
from .literals import Name, call, comment, literal
from .runtime_source import runtime_source


def fused_flip(chain: Chain) -> int | None:
    """Chain index of a HorizontalFlip that crop_mirror_normalize can apply instead: the
    chain ends in Normalize and only mirror-invariant steps stand between the two."""
    enabled = chain.enabled_steps()
    if not enabled or enabled[-1][1].op != "Normalize":
        return None
    for i, step in reversed(enabled[:-1]):
        if step.op == "HorizontalFlip":
            return i
        if step.spec.dali is None or not step.spec.dali.mirror_invariant:
            return None
    return None


def _coin(index: int, step) -> Name:
    """The variable holding a step's coin (the literal 1 when p == 1)."""
    return Name(f"s{index + 1}_applied") if step.p < 1.0 else Name("1")


def _step_lines(position: int, step, scale: float, fuse: str = "", fuse_mirror=None) -> tuple[list[str], list[tuple[str, str]], float]:
    """(statements, [(reported name, variable)], scale after) for one enabled step.

    `fuse`: "flip" leaves the mirroring to a later crop_mirror_normalize; "normalize"
    makes this Normalize apply the fused flip's coin."""
    spec = step.spec
    low = spec.dali
    if low is None:
        raise UnsupportedOpError(f"{spec.name} cannot run on DALI; backends that support it: "
                                 f"{', '.join(spec.backends) or 'none'}")
    prefix = f"s{position + 1}_"
    lines: list[str] = []
    reported: list[tuple[str, str]] = []
    if step.p < 1.0:
        applied = Name(prefix + "applied")
        lines.append(f"{applied} = {call('fn.random.coin_flip', {'probability': float(step.p)})}")
        reported.append(("applied", applied))
    else:
        applied = Name("1")
    height = width = None
    if low.needs_size:
        lines.append(f"{prefix}hw = fn.cast(images.shape(), dtype=types.FLOAT)")
        height, width = Name(f"{prefix}hw[0]"), Name(f"{prefix}hw[1]")
    ctx = DaliContext(x=Name("images"), scale=scale, height=height, width=width, applied=applied, prefix=prefix,
                      mirror=fuse_mirror if fuse == "normalize" else None)
    draws = {}
    for name, source in low.draws(step.params).items():
        var = ctx.var(name.lstrip("_"))
        lines.append(f"{var} = {source}")
        draws[name] = var
        if not name.startswith("_"):
            reported.append((name, var))
    body = low.apply(step.params, ctx, draws) if fuse != "flip" else [
        comment("mirrored by crop_mirror_normalize below (only mirror-invariant steps in between)")]
    if step.p < 1.0 and low.gate == "if":
        # Only the statements that change the images go under the condition: values the
        # step reports must exist for every sample.
        changes = [line for line in body if line.startswith(f"{ctx.x} = ")]
        lines += [line for line in body if line not in changes]
        lines.append(f"if {applied}:")
        lines += ["    " + line for line in changes]
    else:
        lines += body
    reported += [(name, ctx.var(name)) for name in low.reports]
    return lines, reported, (1.0 if low.unit_scale_after else scale)


def emit_dali(chain: Chain) -> str:
    """The whole DALI script as text (`export_chain` syntax-checks it)."""
    lines = [HEADER, comment(f"Chain (seed {chain.seed}), {len(chain.steps)} step(s):")]
    for i, step in enumerate(chain.steps):
        lines.append(comment(f"  {i + 1}. {step.describe()}"))
    body: list[str] = []
    draw_names: list[str] = []
    draw_vars: list[str] = []
    scale = 255.0
    flip = fused_flip(chain)
    last = chain.enabled_steps()[-1][0] if chain.enabled_steps() else None
    for i, step in chain.enabled_steps():
        fuse = "flip" if i == flip else ("normalize" if flip is not None and i == last else "")
        step_lines, reported, scale = _step_lines(i, step, scale, fuse,
                                                  _coin(flip, chain.steps[flip]) if flip is not None else None)
        body.append(comment(f"{i + 1}. {step.describe()}"))
        body += step_lines
        for name, var in reported:
            draw_names.append(f"step{i + 1}_{step.op}.{name}")
            draw_vars.append(var)
    lines += ["", IMPORTS, "", f"SEED = {literal(chain.seed)}",
              comment("Names of the per-sample draws that `augment` returns, in order."),
              f"DRAWS = {literal(tuple(draw_names))}", "", "",
              "def augment(images):",
              '    """The chain on a batch of HWC images (CPU or GPU nodes); returns (images, draws)."""']
    lines += ["    " + line for line in body] or ["    pass"]
    lines += [f"    return images, [{', '.join(draw_vars)}]", "", "", runtime_source(), "", "", BODY]
    return "\n".join(lines)
