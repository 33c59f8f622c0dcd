"""Widgets generated from parameter specs: one control per parameter kind."""
from __future__ import annotations

from typing import Any, Callable

import ipywidgets as w

from ..ops.params import Choice, Flag, Floats, Number, Param, Range, Size

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
    if isinstance(param, Range):
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
