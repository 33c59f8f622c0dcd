"""Emit a DALI script for a chain: `augment(images)` as DALI operators plus pipelines and CLI."""
from __future__ import annotations

import ast
import re
import functools
from pathlib import Path

from ..errors import ExportError, UnsupportedOpError
from ..literals import Name, call, comment, literal
from ..model import ChainModel
from ..ops.spec import DaliContext
from .. import runtime
from .loader_sizes import size_section
from .layout import wrapped
from .program_file import program_file
from .options import ChainFeature, ExportOptions, left_out_names, options_section, reads_boxes, unused_features
from .source_copy import definitions, program_source
from .targets_source import TARGET_MODULES, targets_section

# Files, never imported here: exporting needs no DALI (see source_copy).
RUNTIME = Path(runtime.__file__).parent
PROGRAM = RUNTIME / "dali_program.py"
CHAIN = RUNTIME / "dali_chain.py"
POLICIES = RUNTIME / "dali_policies.py"
TV_POLICIES = RUNTIME / "dali_tv_policies.py"
# The DALI functions lowerings call (runtime/dali_ops/): an export copies those its steps call.
DALI_OPS = tuple(sorted((RUNTIME / "dali_ops").glob("[!_]*.py")))
# What the chain's step functions may use besides the program's imports (each written where used).
STEP_IMPORTS = ("import nvidia.dali.math as dmath", "from nvidia.dali.auto_aug.core import select",
                "from nvidia.dali.pipeline import do_not_convert")


def fused_flip(chain: ChainModel) -> int | None:
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


def _step_function(i: int, step, scale: float, fuse: str = "", flip=None,
                   region=None) -> tuple[str, list[str], list[str], float]:
    """(function name, source lines, reported draw names, scale after) for enabled step i.

    `fuse`: "flip" leaves the mirroring to a later crop_mirror_normalize; "normalize" makes
    this Normalize mirror with the fused flip's coin, re-created from the same seed so that
    every step function stands alone. `flip` is (chain index, p) of that flip. `region`: the
    step takes the encoded files and decodes only its window; `region` is then the
    (chain index, step) of a Resize before it that it does too, or () (see `region_steps`)."""
    spec = step.spec
    low = spec.dali
    if low is None:
        raise UnsupportedOpError(f"{spec.name} cannot run on DALI; backends that support it: "
                                 f"{', '.join(spec.backends) or 'none'}")
    prefix = f"s{i + 1}_"
    lines: list[str] = []
    reported: list[tuple[str, str]] = []
    if step.p < 1.0:
        applied = Name(prefix + "applied")
        lines.append(f"{applied} = " + call("fn.random.coin_flip", {"probability": float(step.p),
                                                                     "seed": Name(f"op_seed(seed, {i + 1}, 0)")}))
        if spec.mixes_batch:
            lines.append(comment("one coin for the whole batch (sample 0's), as Kornia gates batch mixing"))
            lines.append(f"{applied} = fn.permute_batch({applied}, indices=fn.cast({applied} * 0, dtype=types.INT32))")
        reported.append(("applied", applied))
    else:
        applied = Name("1")
    height = width = None
    encoded = Name("encoded") if region is not None else None
    resize = region[1] if region else None
    input_shape = None
    if resize is not None:  # the crop's input is what the Resize gives
        input_shape = f"fn.constant(idata={literal([*resize.params['size'], 3])})"
    elif region is not None:
        input_shape = f"fn.peek_image_shape({encoded})"
    if low.needs_size:
        height, width = _size_names(prefix, input_shape or "images.shape()", lines)
    mirror = None
    if fuse == "normalize":
        flip_index, flip_p = flip
        if flip_p < 1.0:
            mirror = Name(prefix + "mirror")
            lines.append(comment(f"step {flip_index + 1}'s coin again (same seed, same values): the flip happens here"))
            lines.append(f"{mirror} = " + call("fn.random.coin_flip", {
                "probability": float(flip_p), "seed": Name(f"op_seed(seed, {flip_index + 1}, 0)")}))
        else:
            mirror = Name("1")
    ctx = DaliContext(x=Name("images"), scale=scale, height=height, width=width, applied=applied, prefix=prefix,
                      mirror=mirror, step=i + 1, encoded=encoded, input_shape=input_shape,
                      resized=resize.params if resize is not None else None)
    draws = _draw(step, ctx, lines, reported)
    body = low.apply(step.params, ctx, draws) if fuse != "flip" else [
        comment("mirrored by crop_mirror_normalize in a later step (only mirror-invariant steps in between)")]
    lines += _gated(body, ctx, low.reported(step.params), applied) if step.p < 1.0 and low.gate == "if" else body
    lines = _unused_sizes_dropped(lines, prefix)
    reported += [(name, ctx.var(name)) for name in low.reported(step.params)]
    name = f"step_{i + 1}_{_snake(step.op)}"
    if spec.mixes_batch:
        # The labels get the partner and the weight the images got (none where not applied).
        weight = ctx.var("weight") if step.p == 1.0 else Name(f"{ctx.var('weight')} * {applied}")
        lines.append(f"labels = mix_labels(labels, {ctx.var('partner')}, {weight})")
    arguments = "images, seed, labels=None" if spec.mixes_batch else "images, seed"
    source = [f"def {name}({arguments}):", "    " + comment(f"{i + 1}. {step.describe()}")]
    if region is not None:
        steps = ([(region[0], resize)] if resize is not None else []) + [(i, step)]
        name = "decode_" + "_".join(f"step_{k + 1}_{_snake(s.op)}" for k, s in steps)
        source = [f"def {name}(encoded, seed, decoder):"]
        source += ["    " + comment(f"{k + 1}. {s.describe()}") for k, s in steps]
        source += ["    " + comment("The window is drawn as the step functions draw it (same sampler, same seed) from"),
                   "    " + comment("the file's header, and only the pixels it needs are decoded, by `decoder`"),
                   "    " + comment('("cpu" or "mixed").')]
    returned = ", ".join(var for _, var in reported)
    source += ["    " + line for line in lines]
    source.append(f"    return images, [{returned}]" + (", labels" if spec.mixes_batch else ""))
    return name, straight_line(source), [n for n, _ in reported], (1.0 if low.unit_scale_after else scale)


def _marked_straight(source: list[str]) -> bool:
    return source[0].startswith("@do_not_convert")


def straight_line(source: list[str]) -> list[str]:
    """A function's lines, marked @do_not_convert when they hold no control flow and call nothing
    but DALI's operators (fn, dmath, types), numpy, op_seed and the straight runtime functions:
    DALI's autograph then calls it as it is instead of rewriting it (tens of milliseconds a function,
    each time the chain changes), which gives the same graph. (A function that calls other Python
    code, which may branch, stays converted: autograph must follow it there.)

    Example:
        >>> straight_line(["def f(images, seed):", "    return fn.flip(images), []"])[0].split("  #")[0]
        '@do_not_convert'
        >>> straight_line(["def f(images, seed):", "    return fn.crop(images, shape=images.shape()), []"])[0][:15]
        '@do_not_convert'
        >>> straight_line(["def f(images, seed):", "    return select(images), []"])[0]
        'def f(images, seed):'
    """
    if not _branch_free(tuple(source)):
        return source
    return ["@do_not_convert  # no if, loop or Python call: nothing for DALI's autograph to rewrite", *source]


@functools.lru_cache(maxsize=1024)
def _branch_free(source: tuple[str, ...]) -> bool:
    """straight_line's test (kept: a live preview emits the same step functions on every change)."""
    tree = ast.parse("\n".join(source))
    # A method of the function's own values (`images.shape()`, `x.gpu()`) is a DALI node's method:
    # the arguments and what the function assigns are nodes (or the seed), never Python helpers.
    own = {a.arg for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) for a in node.args.args}
    own |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp, ast.For, ast.While, ast.Try, ast.BoolOp, ast.comprehension)):
            return False
        if isinstance(node, ast.Call):
            root = node.func
            while isinstance(root, ast.Attribute):
                root = root.value
            method = root is not node.func and isinstance(root, ast.Name) and root.id in own
            # (numpy builds constants when the pipeline is defined: it never sees a DALI node's value)
            if not (method or isinstance(root, ast.Name) and (root.id in ("fn", "dmath", "types", "np", "op_seed")
                                                               or root.id in straight_functions())):
                return False
    return True


@functools.cache
def straight_functions() -> frozenset[str]:
    """The runtime DALI functions (DALI_OPS) marked @do_not_convert: a step function may call them and
    stay straight.

    Example:
        >>> "opencv_lightness" in straight_functions(), "clahe_at_levels" in straight_functions()
        (True, False)
    """
    return frozenset(name for name, d in definitions(tuple(map(str, DALI_OPS))).items()
                     if "\n@do_not_convert\n" in "\n" + d.source.split("\ndef ")[0] + "\n")


def _group_function(i: int, group, scale: float) -> tuple[str, list[str], list[str]]:
    """(function name, source lines, fully named draws) of an enabled group at chain index i:
    its coin and choice per sample, then each enabled child under the gate of the samples that
    run it (DALI's conditional execution splits the batch)."""
    lines, reported = _group_lines((i + 1,), group, Name("1"))
    name = f"step_{i + 1}_{_snake(group.op)}"
    source = [f"def {name}(images, seed):"] + ["    " + comment(line) for line in group.outline(str(i + 1))]
    source += ["    " + line for line in lines]
    source.append(f"    return images, [{', '.join(var for _, var in reported)}]")
    return name, source, [n for n, _ in reported]


def _group_lines(path: tuple[int, ...], group, outer) -> tuple[list[str], list[tuple[str, str]]]:
    """Statements of a group at `path` whose samples pass `outer` (a gate node, or 1), and its
    reports as (draw name, variable): the group's `applied` and `selected` (one 0/1 column per
    enabled child), then every child's draws named step<path>_<op>.<name>."""
    label = ".".join(map(str, path))
    prefix = "s" + "_".join(map(str, path)) + "_"
    seed = lambda k: Name(f"op_seed(seed, {path[0] if len(path) == 1 else path!r}, {k})")  # noqa: E731
    # (A chain-level group's function starts with its whole outline already.)
    lines: list[str] = [comment(f"{label}. {group.describe()}")] if len(path) > 1 else []
    applied = Name(prefix + "applied")
    # A coin even at p = 1: a per-sample scalar the gates below are made of.
    coin = call("fn.random.coin_flip", {"probability": float(group.p), "seed": seed(0)})
    lines.append(f"{applied} = " + (f"{outer} * {coin}" if outer != "1" else coin))
    children = group.enabled_steps()
    kind = group.spec.kind
    gates = []
    if kind == "one":
        weights = group.params.get("weights") or [1.0] * len(group.steps)
        kept = [weights[k] for k, _ in children]
        choice = Name(prefix + "choice")
        lines.append(f"{choice} = " + call("fn.random.choice", {"__input__": len(children),
                                                                 "p": [w / sum(kept) for w in kept], "seed": seed(1)}))
        gates = [f"({choice} == {j})" for j in range(len(children))]
    elif kind == "some":
        n = min(group.params["n"], len(children))
        keys = [Name(f"{prefix}key{j + 1}") for j in range(len(children))]
        lines.append(comment(f"{n} of {len(children)} children per sample, uniformly: those whose key is among the "
                             f"{n} smallest"))
        for j, key in enumerate(keys):
            lines.append(f"{key} = " + call("fn.random.uniform", {"range": [0.0, 1.0], "seed": seed(j + 1)}))
        for j, key in enumerate(keys):
            # (DALI adds no booleans: each comparison counts as an integer.)
            smaller = " + ".join(f"fn.cast({other} < {key}, dtype=types.INT32)" for other in keys if other is not key)
            gates.append(f"({smaller}) < {n}" if smaller else f"{applied} * 0 + 1")
    else:
        gates = [f"{applied} * 0 + 1"] * len(children)  # every child: a per-sample 1
    selected = [Name(f"{prefix}selected{j + 1}") for j in range(len(children))]
    for var, gate in zip(selected, gates):
        lines.append(f"{var} = fn.cast({gate}, dtype=types.FLOAT)")
    reported = [(f"step{label}_{group.op}.applied", applied),
                (f"step{label}_{group.op}.selected", Name(prefix + "selected"))]
    lines.append(f"{prefix}selected = fn.stack({', '.join(selected)})")
    for j, (k, child) in enumerate(children):
        child_path = (*path, k + 1)
        gate = Name(f"{prefix}runs{j + 1}")
        lines.append(f"{gate} = fn.cast({applied} * {selected[j]}, dtype=types.INT32)")
        if child.is_group:
            child_lines, child_reported = _group_lines(child_path, child, gate)
        else:
            child_lines, child_reported = _child_lines(child_path, child, gate)
        lines += child_lines
        reported += child_reported
    return lines, reported


def _child_lines(path: tuple[int, ...], step, outer) -> tuple[list[str], list[tuple[str, str]]]:
    """Statements of an op inside a group, for the samples that pass `outer` and its own coin."""
    label = ".".join(map(str, path))
    prefix = "s" + "_".join(map(str, path)) + "_"
    low = step.spec.dali
    if low is None:
        raise UnsupportedOpError(f"{step.op} cannot run on DALI; backends that support it: "
                                 f"{', '.join(step.spec.backends) or 'none'}")
    lines = [comment(f"{label}. {step.describe()}")]
    applied = Name(prefix + "applied")
    if step.p < 1.0:
        coin = call("fn.random.coin_flip", {"probability": float(step.p), "seed": Name(f"op_seed(seed, {path!r}, 0)")})
        lines.append(f"{applied} = {outer} * {coin}")
    else:
        lines.append(f"{applied} = {outer} * 1")
    height = width = None
    if low.needs_size:
        height, width = _size_names(prefix, "images.shape()", lines)
    ctx = DaliContext(x=Name("images"), scale=255.0, height=height, width=width, applied=applied, prefix=prefix,
                      step=path)
    reported = [("applied", applied)]
    draws = _draw(step, ctx, lines, reported)
    body = low.apply(step.params, ctx, draws)
    lines += _gated(body, ctx, low.reported(step.params), applied) if low.gate == "if" else body
    lines = _unused_sizes_dropped(lines, prefix)
    reported += [(name, ctx.var(name)) for name in low.reported(step.params)]
    return lines, [(f"step{label}_{step.op}.{name}", var) for name, var in reported]


def _draw(step, ctx: DaliContext, lines: list[str], reported: list) -> dict:
    """Append the statements creating the step's per-sample random values to `lines` (and the
    ones it reports, not starting with "_", to `reported`); returns {draw name: variable}."""
    draws = {}
    for k, (name, random_op) in enumerate(step.spec.dali.draws(step.params).items(), start=1):
        if name.lstrip("_") in SIZE_NAMES:
            # The step's variables share one prefix: a draw so named would overwrite the input's size.
            raise ExportError(f"{step.op}: its DALI draw {name!r} has the name of the step's input size "
                              f"({', '.join(SIZE_NAMES)}); rename the draw in its DaliLowering")
        var = ctx.var(name.lstrip("_"))
        lines.append(f"{var} = {random_op.source(ctx.seed(k))}")
        draws[name] = var
        if not name.startswith("_"):
            reported.append((name, var))
    return draws


# The names _size_names gives a step's input size (after the step's prefix).
SIZE_NAMES = ("hw", "height", "width")


def _size_names(prefix: str, shape: str, lines: list[str]) -> tuple[Name, Name]:
    """Names for the step's input height and width (floats), each subscripted once: a lowering that
    spelled `hw[0]` at every use would make one CPU node per use, and DALI 2.4 merges identical CPU
    nodes in a way that breaks GPU graphs where they feed GPU operators (the graph fails to build)."""
    lines.append(f"{prefix}hw = fn.cast({shape}, dtype=types.FLOAT)")
    lines.append(f"{prefix}height = {prefix}hw[0]")
    lines.append(f"{prefix}width = {prefix}hw[1]")
    return Name(f"{prefix}height"), Name(f"{prefix}width")


def _unused_sizes_dropped(lines: list[str], prefix: str) -> list[str]:
    """The step's lines without the height or width line _size_names wrote where no other line uses
    that name (an op may need one side only)."""
    text = "\n".join(lines)
    unused = {f"{prefix}{side} = {prefix}hw[{k}]" for k, side in enumerate(("height", "width"))
              if len(re.findall(rf"\b{prefix}{side}\b", text)) == 1}
    return [line for line in lines if line not in unused]


def _gated(body: list[str], ctx: DaliContext, reports: tuple[str, ...], applied) -> list[str]:
    """`body` with the statements that run only for the samples the step applies to under
    `if applied:`: all of them, unless the step reports values it computes (`reports`: those must
    exist for every sample), in which case only the statements that change the images."""
    changes = body if not reports else [line for line in body if line.startswith(f"{ctx.x} = ")]
    if not any(not line.lstrip().startswith("#") for line in changes):  # an `if` needs a statement
        return body
    return [line for line in body if line not in changes] + [f"if {applied}:"] + ["    " + line for line in changes]


def region_steps(chain: ChainModel) -> tuple[int, ...]:
    """Chain indices of the leading steps the training pipeline can run while decoding only
    the pixels they need: an enabled crop (RandomResizedCrop, CenterCrop, RandomCrop) first,
    or a Resize then a crop that takes it (CenterCrop, RandomCrop); () when there is none."""
    enabled = chain.enabled_steps()

    def crop(k: int, after_resize: bool) -> bool:
        if k >= len(enabled):
            return False
        low = enabled[k][1].spec.dali
        return (low is not None and low.decodes_region and enabled[k][1].p == 1.0
                and (low.follows_resize or not after_resize))

    if crop(0, False):
        return (enabled[0][0],)
    first = enabled[0][1].spec.dali if enabled else None
    if first is not None and first.defers_to_crop and crop(1, True):
        return (enabled[0][0], enabled[1][0])
    return ()


def gpu_only_steps(chain: ChainModel) -> tuple[tuple[int, str], ...]:
    """(position among the enabled steps, "Op (step N) runs on DALI's GPU only (why)") of each op, inside
    groups too, that DALI runs on the GPU only (OpSpec.gpu_only): the exported pipelines refuse the CPU there.

    Example:
        >>> import workbench as wb
        >>> gpu_only_steps(wb.Chain().add("Rotate").add("OpticalDistortion"))[0][1].split(" (")[:2]
        ['OpticalDistortion', "step 2) runs on DALI's GPU only"]
    """
    return tuple((position, f"{op.op} (step {i + 1}) runs on DALI's GPU only ({op.spec.gpu_only['dali']})")
                 for position, (i, step) in enumerate(chain.enabled_steps()) for op in step.ops()
                 if "dali" in op.spec.gpu_only)


def window_steps(chain: ChainModel) -> tuple[tuple[int, int, dict], ...]:
    """(position among the enabled steps, chain step (1-based), settings) of each step that draws its
    window from the boxes (OpSpec.reads_boxes: RandomIoUCrop), which augment_images draws on the host
    (runtime/targets.py's iou_crop_window) and feeds the pipeline.

    Example:
        >>> import workbench as wb
        >>> [(position, step, settings["trials"]) for position, step, settings in
        ...  window_steps(wb.Chain().add("Rotate").add("RandomIoUCrop", trials=5))]
        [(1, 2, 5)]
    """
    return tuple((position, i + 1, dict(step.params)) for position, (i, step) in enumerate(chain.enabled_steps())
                 if step.spec.reads_boxes)


def _one_size_before(enabled) -> tuple[int, str] | None:
    for position, (i, step) in enumerate(enabled):
        if step.spec.fixes_size:
            return None
        if step.spec.mixes_batch:
            return (position, f"step {i + 1} ({step.op})")
    return None


def _snake(op: str) -> str:
    return "".join("_" + c.lower() if c.isupper() and k else c.lower() for k, c in enumerate(op))


def step_functions(chain: ChainModel) -> tuple[list[str], list[str], list[tuple[str, ...]], bool]:
    """(source lines, names, draws each reports, whether any needs DALI's conditionals) of the chain's
    step functions, one per enabled step, each a function of a batch node and the seed.

    Example:
        >>> from workbench.model import ChainModel
        >>> lines, names, draws, conditionals = step_functions(ChainModel().add("Rotate"))
        >>> names, draws, conditionals
        (['step_1_rotate'], [('step1_Rotate.angle',)], False)
    """
    functions: list[str] = []
    converted = False  # a step function with control flow: the pipelines need DALI's conditionals
    names: list[str] = []
    draws_by_step: list[tuple[str, ...]] = []
    scale = 255.0
    flip = fused_flip(chain)
    enabled = chain.enabled_steps()
    last = enabled[-1][0] if enabled else None
    for i, step in enabled:
        if step.is_group:
            name, source, reported = _group_function(i, step, scale)
        else:
            fuse = "flip" if i == flip else ("normalize" if flip is not None and i == last else "")
            name, source, reported, scale = _step_function(
                i, step, scale, fuse, (flip, chain.steps[flip].p) if flip is not None else None)
            reported = [f"step{i + 1}_{step.op}.{r}" for r in reported]
        functions += source + ["", ""]
        converted |= not _marked_straight(source)
        names.append(name)
        draws_by_step.append(tuple(reported))
    return functions, names, draws_by_step, converted


# Code of the program that only some chains run (see options.ChainFeature).
CHAIN_FEATURES = (
    ChainFeature("windows drawn from the boxes", reads_boxes, ("augment_in_stretches",)),
)


def emit_dali(chain: ChainModel, options: ExportOptions = ExportOptions()) -> str:
    """The whole DALI script as text (`export_chain` syntax-checks it), carrying the features of
    `options` (see codegen/options.py)."""
    lines = [comment(f"Chain (seed {chain.seed}), {len(chain.steps)} step(s):")]
    for i, step in enumerate(chain.steps):
        lines += [comment("  " + line) for line in step.outline(str(i + 1))]
    enabled = chain.enabled_steps()
    size_comments, size_constants = size_section(enabled, "dali", "make_loader's resize=(224, 224)")
    lines += size_comments
    functions, names, draws_by_step, converted = step_functions(chain)
    region = region_steps(chain)
    region_name = None
    if region:
        resize = (region[0], chain.steps[region[0]]) if len(region) == 2 else ()
        region_name, source, _, _ = _step_function(region[-1], chain.steps[region[-1]], 255.0, region=resize)
        functions += source + ["", ""]
        converted |= not _marked_straight(source)
    section = [comment("---- The chain ----"), f"SEED = {literal(chain.seed)}", "", "", *functions,
                comment("The chain's enabled steps, in order, and the names of the per-sample draws each returns."),
               f"STEP_FUNCTIONS = ({''.join(n + ', ' for n in names)})",
               comment("Steps that blend samples of one batch: they take and return the labels too."),
               f"MIXING_STEPS = ({''.join(n + ', ' for n, (_, s) in zip(names, enabled) if s.spec.mixes_batch)})",
               comment("(position, name) of the first mixing step with no size-fixing step before it: the"),
               comment("images must then have one size (the training pipeline needs a folder of one size)."),
               f"ONE_SIZE_BEFORE = {literal(_one_size_before(enabled))}",
               comment("The training pipeline's first REGION_STEPS steps as a function of the encoded files, decoding"),
               comment("only the pixels their crop needs (region decoding); None when the chain does not start with"),
               comment("a crop (or a Resize and a crop)."),
               f"REGION_DECODE = {region_name}",
               f"REGION_STEPS = {len(region)}",
               f"STEP_DRAWS = {literal(tuple(draws_by_step))}",
               comment("Whether a step branches on its per-sample draws (an `if` on a coin: a group, a gated op):"),
               comment("the pipelines then run with DALI's conditionals, which rewrite the pipeline functions"),
               comment("(autograph) each time they are defined; straight-line chains skip that."),
               f"CONDITIONALS = {converted}",
               comment("(position in STEP_FUNCTIONS, what and why) of each op DALI runs on the GPU only: the"),
               comment("pipelines refuse to run those steps on the CPU."),
               f"GPU_ONLY = {literal(gpu_only_steps(chain))}",
               comment("(position in STEP_FUNCTIONS, chain step, settings) of each step whose window augment_images"),
               comment("draws on the host from the boxes as they stand there and feeds (RandomIoUCrop's sampler)."),
               f"WINDOW_STEPS = {literal(window_steps(chain))}",
               f"DRAWS = {literal(tuple(d for step in draws_by_step for d in step))}",
                *size_constants]
    # The targets section names the target functions its plan uses: those, and what they use, are copied.
    targets = wrapped(targets_section(chain, "dali")) if options.targets else ""
    unused = unused_features(chain, CHAIN_FEATURES)
    chosen = options_section("dali", options, unused)
    program = program_source(PROGRAM, CHAIN, available=[POLICIES, TV_POLICIES, *DALI_OPS,
                                                        *(m.__file__ for m in TARGET_MODULES)],
                             uses="\n".join([*functions, chosen, targets]), chain_imports=STEP_IMPORTS,
                             defined=left_out_names("dali", options, unused))
    about = [comment("The program (runtime/dali_program.py in the workbench) and the workbench code it uses, copied"),
             comment("as it stands: the preview runs this very code.")]
    return program_file(lines, section, program, about, chosen, targets)
