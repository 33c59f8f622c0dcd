"""Widgets generated from parameter specs: one control per parameter kind."""
from __future__ import annotations

from typing import Any, Callable

import ipywidgets as w

from ..ops.groups import Weights
from ..ops.params import Choice, Flag, Floats, Number, OpRanges, Param, Range, Size, Span

_LAYOUT = w.Layout(width="340px")
_STYLE = {"description_width": "90px"}


def _step_for(lo: float, hi: float) -> float:
    span = hi - lo
    return 0.001 if span <= 1 else 0.01 if span <= 20 else 0.5


def control_for(param: Param, value: Any, on_change: Callable[[str, Any], None]) -> w.Widget:
    """A widget showing `value` for `param`; edits call on_change(param name, new value).

    Example:
        >>> from workbench.ops import get_op
        >>> c = control_for(get_op("Rotate").param("degrees"), [-10.0, 10.0], lambda n, v: None)
        >>> type(c).__name__, c.value
        ('FloatRangeSlider', (-10.0, 10.0))
    """
    desc = param.name
    if isinstance(param, OpRanges):
        return _op_ranges(param, value, on_change)
    if isinstance(param, Span) and param.integer:  # kernel sizes, hole counts: whole (odd) numbers
        widget = w.IntRangeSlider(value=tuple(value), min=int(param.lo), max=int(param.hi),
                                  step=2 if param.odd else 1, description=desc, continuous_update=False,
                                  layout=_LAYOUT, style=_STYLE)
        widget.observe(lambda ch: on_change(param.name, [int(v) for v in ch["new"]]), names="value")
    elif isinstance(param, Range):
        widget = w.FloatRangeSlider(value=tuple(value), min=param.lo, max=param.hi, step=_step_for(param.lo, param.hi),
                                    description=desc, continuous_update=False, layout=_LAYOUT, style=_STYLE,
                                    readout_format=".3g")
        widget.observe(lambda ch: on_change(param.name, list(ch["new"])), names="value")
    elif isinstance(param, Number) and param.integer:
        widget = w.IntSlider(value=value, min=int(param.lo), max=int(param.hi), step=2 if param.odd else 1,
                             description=desc, continuous_update=False, layout=_LAYOUT, style=_STYLE)
        widget.observe(lambda ch: on_change(param.name, int(ch["new"])), names="value")
    elif isinstance(param, Number):
        widget = w.FloatSlider(value=value, min=param.lo, max=param.hi, step=_step_for(param.lo, param.hi),
                               description=desc, continuous_update=False, layout=_LAYOUT, style=_STYLE)
        widget.observe(lambda ch: on_change(param.name, float(ch["new"])), names="value")
    elif isinstance(param, Size):
        boxes = [w.BoundedIntText(value=v, min=param.lo, max=param.hi, layout=w.Layout(width="90px")) for v in value]
        widget = w.HBox([w.Label(f"{desc} (h, w)", layout=w.Layout(width="94px")), *boxes])
        for box in boxes:
            box.observe(lambda ch: on_change(param.name, [b.value for b in boxes]), names="value")
    elif isinstance(param, Floats):
        boxes = [w.FloatText(value=v, layout=w.Layout(width="80px"), step=0.001) for v in value]
        widget = w.HBox([w.Label(desc, layout=w.Layout(width="94px")), *boxes])
        for box in boxes:
            box.observe(lambda ch: on_change(param.name, [b.value for b in boxes]), names="value")
    elif isinstance(param, Weights):
        # Comma-separated numbers, one per child; what cannot be read is sent as typed, so that
        # validation names the problem.
        widget = w.Text(value=", ".join(f"{v:g}" for v in value), placeholder="equal", description=desc,
                        continuous_update=False, layout=_LAYOUT, style=_STYLE)
        widget.observe(lambda ch: on_change(param.name, _numbers(ch["new"])), names="value")
    elif isinstance(param, Choice):
        widget = w.Dropdown(options=list(param.options), value=value, description=desc, layout=_LAYOUT, style=_STYLE)
        widget.observe(lambda ch: on_change(param.name, ch["new"]), names="value")
    elif isinstance(param, Flag):
        widget = w.Checkbox(value=value, description=desc, indent=False)
        widget.observe(lambda ch: on_change(param.name, bool(ch["new"])), names="value")
    else:  # pragma: no cover - every Param kind is handled above
        raise TypeError(f"no control for {type(param).__name__}")
    # A tooltip on a Box breaks its view in the browser (ipywidgets 8): put it on the fields.
    for field in (widget.children[1:] if isinstance(widget, w.Box) else [widget]):
        field.tooltip = param.doc
    return widget


def _numbers(text: str) -> Any:
    """'1, 2.5' -> [1.0, 2.5]; '' -> []; anything else is returned unchanged."""
    try:
        return [float(part) for part in text.replace(";", ",").split(",") if part.strip()]
    except ValueError:
        return text


def _op_ranges(param: OpRanges, value: dict, on_change: Callable[[str, Any], None]) -> w.Widget:
    """A tick box per op the set may hold, each with its magnitude range (one "±" slider for
    ops applied with a random sign); any edit sends the whole set of ticked ops.
    `widget.op_controls` maps each op name to its (tick box, slider or None)."""
    fields: dict[str, tuple[w.Checkbox, w.Widget | None]] = {}

    def send(_change=None) -> None:
        chosen: dict[str, list[float]] = {}
        for name, (box, slider) in fields.items():
            if not box.value:
                continue
            if slider is None:
                chosen[name] = []
            elif isinstance(slider, w.FloatSlider):
                chosen[name] = [-float(slider.value), float(slider.value)]
            else:
                chosen[name] = [float(v) for v in slider.value]
        on_change(param.name, chosen)

    rows = []
    for op in param.known:
        current = value.get(op.name) or list(op.default or ())
        box = w.Checkbox(value=op.name in value, description=op.name, indent=False, layout=w.Layout(width="110px"))
        box.tooltip = f"{op.name}: {op.unit}" if op.unit else f"{op.name} (no magnitude)"
        slider = None
        if op.symmetric:
            slider = w.FloatSlider(value=current[1], min=0.0, max=op.hi, step=_step_for(0.0, op.hi), description="±",
                                   continuous_update=False, readout_format=".3g", layout=w.Layout(width="225px"),
                                   style={"description_width": "14px"})
        elif op.has_magnitude:
            slider = w.FloatRangeSlider(value=tuple(current), min=op.lo, max=op.hi, step=_step_for(op.lo, op.hi),
                                        continuous_update=False, readout_format=".3g", layout=w.Layout(width="225px"))
        box.observe(send, names="value")
        if slider is not None:
            slider.tooltip = box.tooltip
            slider.observe(send, names="value")
        fields[op.name] = (box, slider)
        rows.append(w.HBox([box] + ([slider] if slider is not None else [])))
    title = w.Label(param.name)
    title.tooltip = param.doc
    widget = w.VBox([title, *rows])
    widget.op_controls = fields
    return widget
