"""The layout of an exported program, the same for every backend: the program's docstring, the
chain's outline and the imports, the chain section, the program's code and the workbench code it
uses (under a few lines on where it comes from), the export options section, the targets section
where the program carries them, and the main block.

Example:
    >>> from workbench.codegen.source_copy import Program
    >>> program = Program("Docs.", "import os", "def main():\\n    print(os.sep)", "main()")
    >>> text = program_file(["# Chain: one step"], ["SEED = 0"], program, ["# The program:"], "# options", "")
    >>> [text.index(part) < text.index(after) for part, after in
    ...  [("import os", "SEED = 0"), ("SEED = 0", "# The program:"), ("def main", "# options")]]
    [True, True, True]
"""
from __future__ import annotations

from ..literals import comment
from .layout import wrapped
from .source_copy import Program


def program_file(head: list[str], section: list[str], program: Program, about: list[str], options: str,
                 targets: str) -> str:
    """The program's text: `head` (the chain's outline), the imports, `section` (the chain section),
    then `about` (comment lines on the copied code), the copied definitions, the `options` section,
    the `targets` section (none when empty) and the main block."""
    # The chain's own lines (not the copied program, which keeps to the line length already) within it.
    lines = ["#!/usr/bin/env python3", f'"""{program.docstring}"""',
             wrapped("\n".join([*head, "", program.imports, "", *section])), "", "",
             *about, "", program.definitions, "", "", options, ""]
    if targets:
        lines += ["", comment("---- The chain's targets ----"), targets]
    return "\n".join([*lines, "", program.main]) + "\n"
