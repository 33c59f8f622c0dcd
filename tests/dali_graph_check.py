"""A check of defined (never built) DALI GPU graphs that needs no GPU.

DALI 2.4 merges identical CPU operators when it builds a pipeline (common subexpression
elimination). Where the merged operators feed a GPU operator, that operator keeps naming the input
that went away, and the GPU pipeline fails to build ("Graph inconsistency detected - the OpSpec's
input 1 "___TensorSubscript_10" not found"): seen on an H100 for RandomSunFlare and RandomShadow,
whose lowerings subscripted the same values twice. CPU pipelines build fine, so only this check
catches it off a GPU: no two identical CPU operators may feed a GPU operator.
"""
from __future__ import annotations

import collections

_IGNORED_ARGUMENTS = ("_origin", "_display_name", "preserve")  # where it was written, not what it computes


def _identity(op) -> tuple:
    """What an operator computes: its schema, device, inputs and arguments (not its name or origin)."""
    spec = op.spec
    inputs = tuple(spec.InputName(i) for i in range(spec.NumInput()))
    arguments, section = [], None
    for line in (raw.strip() for raw in str(spec).splitlines()):
        if line.endswith(":") and line[:-1] in ("Inputs", "Outputs", "Arguments", "Argument inputs"):
            section = line[:-1]
        elif section in ("Arguments", "Argument inputs") and not line.startswith(_IGNORED_ARGUMENTS):
            arguments.append(line)
    return (getattr(op._op, "schema_name", type(op._op).__name__), getattr(op._op, "device", "?"), inputs,
            tuple(arguments))


def merged_cpu_inputs_of_gpu_operators(pipe) -> list[str]:
    """Names of the CPU operators in `pipe`'s graph that DALI would merge with an identical one and
    that feed a GPU operator (each such group breaks the GPU build); [] when there are none."""
    if pipe._ops is None:
        pipe._build_graph()  # what build() does first; it needs no device
    groups = collections.defaultdict(list)
    devices_reading = collections.defaultdict(set)
    for op in pipe._ops:
        groups[_identity(op)].append(op)
        for i in range(op.spec.NumInput()):
            devices_reading[op.spec.InputName(i)].add(getattr(op._op, "device", "?"))
    found = []
    for (schema, device, inputs, _), members in groups.items():
        outputs = [m.spec.OutputName(0) for m in members]
        if len(members) > 1 and device == "cpu" and inputs and any("gpu" in devices_reading[o] for o in outputs):
            found.append(f"{schema} x{len(members)} ({', '.join(outputs)})")
    return found
