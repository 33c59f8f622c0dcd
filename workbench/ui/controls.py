"""Widgets generated from parameter specs: one control per parameter kind.

Numbers and ranges get a slider whose span and step come from the spec (`Range.slider`,
`Range.step`; by default the valid range and about 1/200 of it, a 1-2-5 step), values rounded to
that step's decimals (a drag never leaves float noise in the chain), and boxes to type exact
numbers, which may go past the slider's span up to the valid range (the slider widens to show
them). A typed value the spec refuses is named by the app and the box goes back to the value the
step keeps.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable

import ipywidgets as w

from ..ops.groups import Weights
from ..ops.params import Choice, Flag, Floats, Number, OpRanges, Param, Range, Sides, Size, Span

# on_change(name, value) -> whether the step took the value (False: the app said why).
OnChange = Callable[[str, Any], bool]

LABEL_WIDTH = "92px"
ENTRY_WIDTH = "64px"


@functools.lru_cache(maxsize=None)
def shared_layout(**css: str) -> w.Layout:
    """The one Layout model of these CSS properties, for every widget that looks so (never
    changed afterwards). Each widget model is a message to the page and a view it builds: a
    palette click built 176, a third of them Layouts alike.

    Example:
        >>> shared_layout(width="64px") is shared_layout(width="64px")
        True
    """
    return w.Layout(**css)


@functools.lru_cache(maxsize=None)
def shared_style(widget: type, **values: Any) -> w.Widget:
    """The one style model (ButtonStyle, SliderStyle...) with these values for widgets of the
    class `widget`, shared as `shared_layout` is (never changed afterwards).

    Example:
        >>> shared_style(w.Button) is shared_style(w.Button), type(shared_style(w.FloatText)).__name__
        (True, 'DescriptionStyle')
    """
    return widget.style.klass(**values)


_ROW = shared_layout(width="100%", align_items="center")


def nice_step(span: float) -> float:
    """A 1-2-5 step of about 1/200 of `span` (a slider's arrow key moves it half a percent).

    Example:
        >>> nice_step(180), nice_step(3.0), nice_step(1.0), nice_step(0.999)
        (1.0, 0.02, 0.005, 0.005)
    """
    x = span / 200 if span > 0 and math.isfinite(span) else 0.01
    exponent = math.floor(math.log10(x))
    mantissa = min((1, 2, 5, 10), key=lambda m: abs(math.log10(m * 10.0 ** exponent / x)))
    return float(f"{mantissa * 10.0 ** exponent:.12g}")


def decimals(step: float) -> int:
    """Decimal places that show a multiple of `step` exactly (1-2-5 steps).

    Example:
        >>> decimals(1.0), decimals(0.02), decimals(0.005)
        (0, 2, 3)
    """
    return max(0, -math.floor(math.log10(step) + 1e-9))


def slider_span(param: Param) -> tuple[float, float]:
    """The span the slider covers: the spec's `slider`, else its valid range."""
    lo, hi = getattr(param, "slider", None) or (param.lo, param.hi)
    return float(lo), float(hi)


def step_of(param: Param) -> float:
    """The slider's step: the spec's, 2 for odd integers, 1 for integers, else nice_step of its span."""
    if getattr(param, "step", None):
        return float(param.step)
    if getattr(param, "integer", False):
        return 2.0 if getattr(param, "odd", False) else 1.0
    lo, hi = slider_span(param)
    return nice_step(hi - lo)


def control_for(param: Param, value: Any, on_change: OnChange) -> w.Widget:
    """A widget row showing `value` for `param`; edits call on_change(param name, new value).
    `row.control` is the widget holding the value (a slider, dropdown, check box...), and
    `row.entries` the boxes for typing exact numbers (numbers and ranges).

    Example:
        >>> from workbench.ops import get_op
        >>> row = control_for(get_op("Rotate").param("degrees"), [-10.0, 10.0], lambda n, v: True)
        >>> type(row.control).__name__, row.control.value, row.control.step, [e.value for e in row.entries]
        ('FloatRangeSlider', (-10.0, 10.0), 1.0, [-10.0, 10.0])
    """
    if isinstance(param, OpRanges):
        return _op_ranges(param, value, on_change)
    if isinstance(param, (Range, Span)):
        return _numeric(param, list(value), on_change, pair=True)
    if isinstance(param, Number):
        return _numeric(param, [value], on_change, pair=False)
    if isinstance(param, Size):
        boxes = [w.BoundedIntText(value=v, min=param.lo, max=param.hi, style=shared_style(w.BoundedIntText),
                                  layout=shared_layout(width="90px")) for v in value]
        row = _row(f"{param.name} (h, w)", boxes, param.doc)
        for box in boxes:
            box.observe(lambda ch: on_change(param.name, [b.value for b in boxes]), names="value")
        row.control, row.entries = row, boxes
        return row
    if isinstance(param, Floats):
        boxes = [w.FloatText(value=v, step=0.001, style=shared_style(w.FloatText), layout=shared_layout(width="74px"))
                 for v in value]
        row = _row(param.name, boxes, param.doc)
        for box in boxes:
            box.observe(lambda ch: on_change(param.name, [b.value for b in boxes]), names="value")
        row.control, row.entries = row, boxes
        return row
    if isinstance(param, (Weights, Sides)):
        # Comma-separated numbers (one per child, or the sides to draw from); what cannot be read
        # is sent as typed, so that validation names the problem.
        widget = w.Text(value=", ".join(f"{v:g}" for v in value), placeholder="equal" if isinstance(param, Weights)
                        else "e.g. 480, 512, 544", continuous_update=False,
                        style=shared_style(w.Text), layout=shared_layout(flex="1 1 auto", width="auto"))
        widget.observe(lambda ch: on_change(param.name, _numbers(ch["new"])), names="value")
    elif isinstance(param, Choice):
        widget = w.Dropdown(options=list(param.options), value=value, style=shared_style(w.Dropdown),
                            layout=shared_layout(flex="1 1 auto", width="auto"))
        widget.observe(lambda ch: on_change(param.name, ch["new"]), names="value")
    elif isinstance(param, Flag):
        widget = w.Checkbox(value=value, indent=False, style=shared_style(w.Checkbox),
                            layout=shared_layout(width="auto"))
        widget.observe(lambda ch: on_change(param.name, bool(ch["new"])), names="value")
    else:  # pragma: no cover - every Param kind is handled above
        raise TypeError(f"no control for {type(param).__name__}")
    row = _row(param.name, [widget], param.doc)
    row.control, row.entries = widget, []
    return row


def _row(label: str, fields: list[w.Widget], doc: str) -> w.HBox:
    name = w.Label(label, style=shared_style(w.Label), layout=shared_layout(width=LABEL_WIDTH, flex="0 0 auto"))
    name.add_class("wb-param-name")
    # A tooltip on a Box breaks its view in the browser (ipywidgets 8): put it on the fields.
    for widget in (name, *fields):
        widget.tooltip = doc
    row = w.HBox([name, *fields], layout=_ROW)
    row.add_class("wb-param")
    return row


def _numeric(param: Param, values: list, on_change: OnChange, pair: bool) -> w.HBox:
    """Slider and typed boxes for a number (pair=False) or a [lo, hi] range (pair=True)."""
    integer = bool(getattr(param, "integer", False))
    step = step_of(param)
    places = 0 if integer else decimals(step)
    lo, hi = slider_span(param)
    lo, hi = min([lo, *values]), max([hi, *values])  # a value set past the slider's span widens it
    kind = (w.IntRangeSlider if pair else w.IntSlider) if integer else (w.FloatRangeSlider if pair else w.FloatSlider)
    entry = w.IntText if integer else w.FloatText
    number = int if integer else float
    slider = kind(value=tuple(values) if pair else values[0], min=number(lo), max=number(hi), step=number(step),
                  readout=False, continuous_update=False, style=shared_style(kind),
                  layout=shared_layout(flex="1 1 auto", width="auto", min_width="60px"))
    boxes = [entry(value=v, style=shared_style(entry), layout=shared_layout(width=ENTRY_WIDTH, flex="0 0 auto"))
             for v in values]
    for box in boxes:
        box.add_class("wb-entry")
    state = {"busy": False, "kept": list(values)}

    def show(vals: list) -> None:
        state["busy"] = True
        try:
            slider.min, slider.max = number(min(slider.min, *vals)), number(max(slider.max, *vals))
            slider.value = tuple(vals) if pair else vals[0]
            for box, v in zip(boxes, vals):
                box.value = v
        finally:
            state["busy"] = False

    def send(vals: list) -> None:
        vals = [number(v) for v in vals]
        if on_change(param.name, vals if pair else vals[0]) is False:
            show(state["kept"])  # refused: the app said why; show what the step keeps
        else:
            state["kept"] = vals
            show(vals)

    def from_slider(change) -> None:
        if state["busy"]:
            return
        new = list(change["new"]) if pair else [change["new"]]
        send([v if integer else round(v, places) for v in new])

    def from_box(change) -> None:
        if not state["busy"]:
            send([box.value for box in boxes])

    slider.observe(from_slider, names="value")
    for box in boxes:
        box.observe(from_box, names="value")
    fields = [boxes[0], slider, boxes[1]] if pair else [slider, boxes[0]]
    row = _row(param.name, fields, param.doc)
    row.control, row.entries = slider, boxes
    return row


def _numbers(text: str) -> Any:
    """'1, 2.5' -> [1.0, 2.5]; '' -> []; anything else is returned unchanged."""
    try:
        return [float(part) for part in text.replace(";", ",").split(",") if part.strip()]
    except ValueError:
        return text


def _op_ranges(param: OpRanges, value: dict, on_change: OnChange) -> w.Widget:
    """A tick box per op the set may hold, each with its magnitude range (one "±" slider for
    ops applied with a random sign); any edit sends the whole set of ticked ops.
    `widget.op_controls` maps each op name to its (tick box, slider or None)."""
    fields: dict[str, tuple[w.Checkbox, w.Widget | None]] = {}

    def send(_change=None) -> None:
        chosen: dict[str, list[float]] = {}
        for name, (box, slider) in fields.items():
            if not box.value:
                continue
            places = decimals(slider.step) if slider is not None else 0
            if slider is None:
                chosen[name] = []
            elif isinstance(slider, w.FloatSlider):
                chosen[name] = [-round(float(slider.value), places), round(float(slider.value), places)]
            else:
                chosen[name] = [round(float(v), places) for v in slider.value]
        on_change(param.name, chosen)

    rows = []
    for op in param.known:
        current = value.get(op.name) or list(op.default or ())
        box = w.Checkbox(value=op.name in value, description=op.name, indent=False, style=shared_style(w.Checkbox),
                         layout=shared_layout(width="120px"))
        box.tooltip = f"{op.name}: {op.unit}" if op.unit else f"{op.name} (no magnitude)"
        slider = None
        if op.symmetric:
            step = nice_step(op.hi)
            slider = w.FloatSlider(value=current[1], min=0.0, max=op.hi, step=step, description="±",
                                   continuous_update=False, readout_format=f".{decimals(step)}f",
                                   layout=shared_layout(flex="1 1 auto", width="auto"),
                                   style=shared_style(w.FloatSlider, description_width="14px"))
        elif op.has_magnitude:
            step = nice_step(op.hi - op.lo)
            slider = w.FloatRangeSlider(value=tuple(current), min=op.lo, max=op.hi, step=step,
                                        continuous_update=False, readout_format=f".{decimals(step)}f",
                                        style=shared_style(w.FloatRangeSlider),
                                        layout=shared_layout(flex="1 1 auto", width="auto"))
        box.observe(send, names="value")
        if slider is not None:
            slider.tooltip = box.tooltip
            slider.observe(send, names="value")
        fields[op.name] = (box, slider)
        rows.append(w.HBox([box] + ([slider] if slider is not None else []), layout=_ROW))
    title = w.Label(param.name, style=shared_style(w.Label))
    title.tooltip = param.doc
    widget = w.VBox([title, *rows], layout=shared_layout(width="100%"))
    widget.op_controls = fields
    widget.control, widget.entries = widget, []
    return widget
