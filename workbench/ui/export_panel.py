"""The app's export: a folder and a file name, the form (a runnable program, or a snippet of the
chain alone to paste), what the program carries besides the chain (the export options, each box
with what it adds to this chain's file in lines), the export button, the code it wrote, and for a
program a run hint that repeats what the app was given (the images' folder, the annotation files).

A file this app did not write (or that changed since it wrote it) is never replaced silently: the
panel says so and offers a 'replace' button; the app's own last export of a file is replaced, and
the message says so.
"""
from __future__ import annotations

import hashlib
import html
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import ipywidgets as w

from ..codegen import FORMS, emit
from ..codegen.options import FEATURES, export_options, options_of
from ..errors import WorkbenchError


def highlighted(source: str) -> str:
    """`source` as syntax-highlighted HTML in a scrolling box."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    formatter = HtmlFormatter(noclasses=True, style="friendly")
    return (f'<div style="max-height:420px;overflow:auto;font-size:12px">'
            f"{highlight(source, PythonLexer(), formatter)}</div>")


class ExportPanel:
    """`export(chain, backend, images=, annotations=)` writes the chain's code for `backend` in the
    chosen form into the folder box's folder under the file box's name (default augment_<backend>.py,
    augment_<backend>_snippet.py for a snippet) and shows it.

    A program carries the options whose boxes are ticked (targets is ticked from the start when the
    app was given annotations: its run hint passes them); `costs(chain, backend)` labels each box
    with the lines it adds to that chain's file, and greys out those the backend does not take.

    Example:
        >>> panel = ExportPanel(lambda: None)
        >>> panel.folder.value, panel.form.value, panel.replace_button.layout.display
        ('exports', 'program', 'none')
        >>> import workbench as wb
        >>> costs = panel.costs(wb.Chain().add("HorizontalFlip"), "albumentations")
        >>> sorted(costs), costs["targets"] > 0, panel.options["shards"].disabled
        (['targets'], True, True)
    """

    def __init__(self, start: Callable[[], Any], annotated: bool = False):
        self.folder = w.Text(value="exports", description="folder", layout=w.Layout(width="220px"))
        self.name = w.Text(value="", placeholder="augment_<backend>.py", description="file",
                           layout=w.Layout(width="260px"))
        self.form = w.ToggleButtons(options=FORMS, value="program", style={"button_width": "80px"},
                                    tooltips=["a runnable script: the chain, its loader, --save, --bench",
                                              "the chain alone in the library's own terms, seeded, to paste"])
        self.options = {option: w.Checkbox(value=option == "targets" and annotated, description=option, indent=False,
                                           tooltip=f"the program also carries {words}",
                                           layout=w.Layout(width="auto", margin="0 16px 0 0"))
                        for option, words in FEATURES.items()}
        self._shown: tuple | None = None  # the (chain, backend) whose costs the boxes show
        self.form.observe(lambda ch: self._shown and self.costs(*self._shown), names="value")
        self.button = w.Button(description="export", icon="download", button_style="primary")
        self.button.on_click(lambda b: start())
        self.replace_button = w.Button(description="replace it", icon="exclamation-triangle", button_style="warning",
                                       layout=w.Layout(display="none", width="auto"))
        self.replace_button.on_click(lambda b: start(True))
        self.message = w.HTML()
        self.message.add_class("wb-export-message")
        self.code = w.HTML()
        self._written: dict[Path, str] = {}  # files this panel wrote: resolved path -> sha256 of what it wrote
        self.options_row = w.HBox([w.HTML("a program also carries:&nbsp;"), *self.options.values()],
                                  layout=w.Layout(align_items="center", flex_flow="row wrap"))
        self.widget = w.VBox([w.HBox([self.folder, self.name, self.form, self.button, self.replace_button]),
                              self.options_row, self.message, self.code])
        self.widget.add_class("wb-export")

    def say(self, text: str, error: bool = False) -> None:
        colour = "#b00020" if error else "#1b5e20"
        self.message.value = f'<span style="color:{colour}">{html.escape(text)}</span>' if text else ""

    def chosen(self, backend: str) -> dict[str, bool]:
        """The ticked options that `backend` takes (an option it lacks stays unticked in its file)."""
        return {option: self.options[option].value for option in options_of(backend)}

    def costs(self, chain, backend: str) -> dict[str, int]:
        """The lines each option `backend` takes adds to `chain`'s program (the file without any
        option against the file with that one), written on its box; the others greyed out."""
        self._shown = (chain, backend)
        taken, base = options_of(backend), export_options(chain, backend)
        plain = emit(chain, backend, options=base).count("\n")
        costs = {}
        for option, box in self.options.items():
            needed = option in taken and getattr(base, option)  # a step needs it: in the file either way
            box.disabled = option not in taken or needed or self.form.value == "snippet"
            if option not in taken:
                box.description = f"{option} (not on {backend})"
                continue
            with_it = emit(chain, backend, options=replace(base, **{option: True})).count("\n")
            costs[option] = with_it - plain
            box.description = f"{option} (the chain needs it)" if needed else f"{option} (+{costs[option]:,} lines)"
        return costs

    def file_name(self, backend: str) -> str:
        suffix = "_snippet" if self.form.value == "snippet" else ""
        return self.name.value.strip() or f"augment_{backend}{suffix}.py"

    def target(self, backend: str) -> Path:
        return Path(self.folder.value or ".") / self.file_name(backend)

    def export(self, chain, backend: str, images: Any = None, annotations: dict | None = None,
               replace: bool = False) -> str | None:
        """Write and show the code; None (and a message) when it cannot, or when it would replace a
        file this panel did not write and `replace` is False."""
        self.replace_button.layout.display = "none"
        target = self.target(backend)
        resolved = target.resolve()
        if target.exists() and not replace and self._written.get(resolved) != _sha(target):
            self.say(f"{target} already exists and this app did not write it (or it changed since): press "
                     "'replace it' to overwrite it, or type another file name", error=True)
            self.replace_button.layout.display = ""
            return None
        replacing = target.exists()
        try:
            # The file box is typed text: the export stays inside the folder (export() checks).
            options = self.chosen(backend) if self.form.value == "program" else {}
            source = chain.export(backend, path=self.file_name(backend), folder=self.folder.value or ".",
                                  overwrite=True, form=self.form.value, **options)
        except (WorkbenchError, OSError) as exc:
            self.say(str(exc), error=True)
            return None
        self._written[resolved] = _sha(target)
        lines = source.count("\n")
        wrote = f"{'replaced' if replacing else 'wrote'} {target} ({lines} lines)"
        if self.form.value == "snippet":
            self.say(f"{wrote}: the chain alone, to paste into your training script; its docstring says how to "
                     "call it and what it reproduces of this preview")
        else:
            given = annotations if options.get("targets") else None
            self.say(f"{wrote}; run it: {run_hint(target, chain.seed, images, given)}")
        self.code.value = highlighted(source)
        return source


def run_hint(script: Path, seed: int, images: Any = None, annotations: dict | None = None) -> str:
    """The command that reproduces the preview with the exported file: its images' folder where the
    app was given one, the annotation files where it was given them.

    Example:
        >>> run_hint(Path("exports/a.py"), 7, "data", {"coco": "data/c.json", "masks": None})
        'python exports/a.py --images data --seed 7 --save out.npz --coco data/c.json'
    """
    folder = str(images) if isinstance(images, (str, Path)) else "DIR"
    words = ["python", str(script), "--images", folder, "--seed", str(seed), "--save", "out.npz"]
    for key in ("coco", "masks"):
        if annotations and annotations.get(key) is not None:
            words += [f"--{key}", str(annotations[key])]
    return shlex.join(words)


def _sha(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""
