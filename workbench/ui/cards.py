"""A card per chain step: enable box, title (click to select: new ops go after the selected step),
move, duplicate, reset and remove buttons, labelled group actions, p and the op's parameters.

`card.step_controls` maps "enabled", "p", "title", "buttons" (up, down, duplicate, reset, remove),
"actions" (group, indent, outdent, ungroup), for a group "kind" and "children", and each parameter
name to the widget holding its value.
"""
from __future__ import annotations

from typing import Any, Protocol

import ipywidgets as w

from ..model import Step
from ..ops import GROUPS
from ..ops.params import Number
from .controls import control_for, shared_layout, shared_style

_P_DOC = "probability that the step runs on a sample"


class Editor(Protocol):
    """What a card asks of the app (steps addressed by index path: (2, 0) is step 3's first child)."""

    selected: tuple[int, ...] | None

    def select(self, path: tuple[int, ...] | None) -> None: ...
    def move(self, path, offset: int) -> None: ...
    def duplicate(self, path) -> None: ...
    def reset(self, path) -> None: ...
    def remove(self, path) -> None: ...
    def group(self, path, kind: str = "OneOf") -> None: ...
    def indent(self, path) -> None: ...
    def outdent(self, path) -> None: ...
    def ungroup(self, path) -> None: ...
    def set_kind(self, path, kind: str) -> None: ...
    def set_value(self, path, name: str, value: Any, shown: bool = False) -> bool: ...


def label(path: tuple[int, ...]) -> str:
    """The step number people see: 3, or 3.1 for the first child of step 3.

    Example:
        >>> label((2,)), label((2, 0))
        ('3', '3.1')
    """
    return ".".join(str(k + 1) for k in path)


def step_card(editor: Editor, path: tuple[int, ...], step: Step, siblings: list[Step],
              selected: tuple[int, ...] | None) -> w.VBox:
    """The card of the step at `path`, marked when it is the `selected` one.
    `card.renumber(new_path, selected)` moves it to another place in the chain (its number,
    what its buttons act on, the mark), so that an insertion above it does not rebuild it:
    every widget is a model the page builds.

    Example:
        >>> from workbench.model import Step
        >>> steps = [Step.from_dict({"op": op}, k + 1) for k, op in enumerate(["Resize", "Rotate"])]
        >>> card = step_card(None, (1,), steps[1], steps, None)
        >>> card.renumber((2,), (2,)); card.step_controls["title"].description, card._dom_classes
        ('3. Rotate', ('wb-card', 'wb-selected'))
    """
    spec = step.spec
    place = list(path)  # what the callbacks act on: renumber() changes it

    def here() -> tuple[int, ...]:
        return tuple(place)

    enabled = w.Checkbox(value=step.enabled, indent=False, style=shared_style(w.Checkbox),
                         layout=shared_layout(width="22px", flex="0 0 auto"))
    enabled.tooltip = "enable / disable"

    def on_enabled(change) -> None:
        if editor.set_value(here(), "enabled", change["new"], shown=True):
            (card.remove_class if change["new"] else card.add_class)("wb-off")

    enabled.observe(on_enabled, names="value")
    title = w.Button(description=f"{label(path)}. {step.op}", style=shared_style(w.Button),
                     layout=shared_layout(flex="1 1 auto", width="auto", min_width="0"))
    title.tooltip = f"{spec.doc}\n(click to select: new ops are added after the selected step)"
    title.add_class("wb-card-title")
    title.on_click(lambda b: editor.select(None if editor.selected == here() else here()))
    buttons = []
    for icon, tip, action in (("arrow-up", "move up", lambda b: editor.move(here(), -1)),
                              ("arrow-down", "move down", lambda b: editor.move(here(), 1)),
                              ("copy", "duplicate", lambda b: editor.duplicate(here())),
                              ("eraser", "reset to defaults", lambda b: editor.reset(here())),
                              ("trash", "remove", lambda b: editor.remove(here()))):
        button = w.Button(icon=icon, tooltip=tip, style=shared_style(w.Button),
                          layout=shared_layout(width="30px", flex="0 0 auto", padding="0"))
        button.on_click(action)
        buttons.append(button)
    index = path[-1]
    above_is_group = index > 0 and siblings[index - 1].is_group
    actions = {}
    for key, text, tip, action, usable in (
            ("group", "group", "put this step in a new group (OneOf: one of its steps runs per sample)",
             lambda b: editor.group(here()), True),
            ("indent", "into group above", "move this step into the group just above it",
             lambda b: editor.indent(here()), above_is_group),
            ("outdent", "out of group", "move this step out of its group, to just after it",
             lambda b: editor.outdent(here()), len(path) > 1),
            ("ungroup", "ungroup", "replace this group by its steps", lambda b: editor.ungroup(here()), step.is_group)):
        button = w.Button(description=text, tooltip=tip, disabled=not usable, style=shared_style(w.Button),
                          layout=shared_layout(width="auto", height="24px", flex="0 1 auto"))
        button.add_class("wb-group-action")
        button.on_click(action)
        actions[key] = button
    p_param = Number("p", _P_DOC, 1.0, lo=0.0, hi=1.0, step=0.01)
    p = control_for(p_param, step.p, lambda _, value: editor.set_value(here(), "p", float(value), shown=True))
    for part in (p.control, *p.entries):
        part.disabled = spec.always_applies
    if spec.always_applies:
        p.children[0].tooltip = f"p is 1: {spec.always_applies_why}"
    controls = [control_for(param, step.params[param.name], lambda n, v: editor.set_value(here(), n, v, shown=True))
                for param in spec.params]
    head = w.HBox([enabled, title, *buttons], layout=shared_layout(width="100%", align_items="center"))
    rows: list[w.Widget] = [head, w.HBox(list(actions.values()), layout=shared_layout(width="100%"))]
    extra: dict[str, Any] = {}
    if step.is_group:
        kind = w.Dropdown(options=list(GROUPS), value=step.op, style=shared_style(w.Dropdown),
                          layout=shared_layout(flex="1 1 auto", width="auto"))
        kind.tooltip = spec.doc
        kind.observe(lambda ch: editor.set_kind(here(), ch["new"]), names="value")
        children = w.VBox([step_card(editor, (*path, k), child, step.steps, selected)
                           for k, child in enumerate(step.steps)], layout=shared_layout(margin="0 0 0 14px"))
        kind_row = w.HBox([w.Label("group", style=shared_style(w.Label), layout=shared_layout(width="92px")), kind],
                          layout=shared_layout(width="100%"))
        rows += [kind_row, p, *controls, children]
        extra = {"kind": kind, "children": children}
    else:
        rows += [p, *controls]
    card = w.VBox(rows, layout=shared_layout(width="100%", padding="3px 4px", margin="2px 0"))
    card.add_class("wb-card")
    if tuple(path) == tuple(selected or ()):
        card.add_class("wb-selected")
    if not step.enabled:
        card.add_class("wb-off")
    card.step_controls = {"enabled": enabled, "title": title, "p": p.control, "p_entry": p.entries[0],
                          "buttons": buttons, "actions": actions, **extra,
                          **{param.name: c.control for param, c in zip(spec.params, controls)},
                          "entries": {param.name: c.entries for param, c in zip(spec.params, controls)}}

    def renumber(new_path: tuple[int, ...], new_selected: tuple[int, ...] | None) -> None:
        place[:] = new_path
        title.description = f"{label(new_path)}. {step.op}"
        (card.add_class if tuple(new_path) == tuple(new_selected or ()) else card.remove_class)("wb-selected")
        for k, child in enumerate(extra["children"].children if step.is_group else ()):
            child.renumber((*new_path, k), new_selected)

    card.renumber = renumber
    return card
