"""Lines of generated source kept within the project's line length (120, as pyproject.toml's ruff
settings say): the emitters write a step's call or its description on one line, whatever its
length; `wrapped` breaks the long ones as a person would, a call after its commas with the rest
under its opening bracket, a comment into comment lines. The workbench's own code copied into an
export is within the limit already.

Example:
    >>> print(wrapped("x = f(aaaa, bbbb, cccc)", width=14))
    x = f(aaaa,
          bbbb,
          cccc)
"""
from __future__ import annotations

import ast
import io
import textwrap
import tokenize

WIDTH = 120


def wrapped(source: str, width: int = WIDTH) -> str:
    """`source` with each line longer than `width` broken: a comment line into several, a code line
    after the commas of its first bracket (where that fits; other lines stay as they are). Lines
    inside a string that spans lines are never touched."""
    out: list[str] = []
    inside_string = _lines_inside_strings(source)
    for number, line in enumerate(source.split("\n"), start=1):
        if len(line) <= width or number in inside_string:
            out.append(line)
        elif line.lstrip().startswith("#"):
            out += _comment_lines(line, width)
        else:
            out += _code_lines(_bracketed_names(line), width)
    return "\n".join(out)


def _bracketed_names(line: str) -> str:
    """An assignment statement that unpacks into bare names (`a, b = f(x)`) with its names in brackets,
    so that they break like arguments; any other line as it is."""
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return line  # part of a statement that spans lines
    node = tree.body[0] if len(tree.body) == 1 else None
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple)
            and all(isinstance(e, ast.Name) for e in node.targets[0].elts)) or line.lstrip().startswith("("):
        return line
    value = ast.get_source_segment(line.strip(), node.value)
    if not line.rstrip().endswith(value):  # a comment after it: left as it is
        return line
    indent = len(line) - len(line.lstrip())
    return f"{line[:indent]}({', '.join(e.id for e in node.targets[0].elts)}) = {value}"


def _lines_inside_strings(source: str) -> set[int]:
    """The numbers of the lines a multi-line string literal covers past its first (docstrings)."""
    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                inside.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return set(range(1, source.count("\n") + 2))  # not Python as a whole: touch nothing
    return inside


def _comment_lines(line: str, width: int) -> list[str]:
    """A long comment line as several, the later ones indented four more under its text."""
    stripped = line.lstrip()
    indent = line[:len(line) - len(stripped)]
    text = stripped[1:]
    lead = len(text) - len(text.lstrip())
    first = f"{indent}#{' ' * lead}"
    parts = textwrap.wrap(text.strip(), width - len(first) - 4, break_long_words=False, break_on_hyphens=False)
    return [first + parts[0]] + [first + "    " + part for part in parts[1:]]


def _code_lines(line: str, width: int, inside: bool = False) -> list[str]:
    """A long code line broken after the commas of one of its brackets, the shallowest first: greedily,
    the later lines under the bracket's first argument, or (a bracket far to the right) four columns in
    on lines of their own; each resulting line still too long broken the same way. The line as it is
    where no break shortens it. `inside`: the line is one this broke, within a bracket, where a long
    string may go on as adjacent literals on lines of their own."""
    if len(line) <= width:
        return [line]
    tokens = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(line + "\n").readline):
            tokens.append(token)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # a line that opens a bracket closed on a later line: its tokens so far do
    brackets, stack = [], []  # [depth, column after the bracket, columns after its commas]
    for token in tokens:
        if token.type != tokenize.OP:
            continue
        if token.string in "([{":
            stack.append([len(stack), token.end[1], []])
            brackets.append(stack[-1])
        elif token.string in ")]}":
            if stack:
                stack.pop()
        elif token.string == "," and stack:
            stack[-1][2].append(token.end[1])
    indent = len(line) - len(line.lstrip())
    for _, opened, cuts in sorted(brackets, key=lambda b: (b[0], b[1])):
        hanging = opened > width // 2
        bounds = ([opened] if hanging else []) + [cut for cut in cuts if cut < len(line)]
        if not bounds:
            continue
        pieces = [line[:bounds[0]]] + [line[a:b].strip() for a, b in zip(bounds, bounds[1:] + [len(line)])]
        pieces = [piece for piece in pieces if piece]
        lead = " " * (indent + 4 if hanging else opened)
        lines, current = [], pieces[0]
        for k, piece in enumerate(pieces[1:]):
            if not (hanging and k == 0) and len(current) + 1 + len(piece) <= width:
                current += " " + piece
            else:
                lines.append(current)
                current = lead + piece
        lines.append(current)
        if len(lines) > 1 and all(len(part) < len(line) for part in lines):
            return [part for broken in lines for part in _code_lines(broken, width, inside=True)]
    return _string_lines(tokens, line, width) if inside else [line]


def _string_lines(tokens, line: str, width: int) -> list[str]:
    """A line that is one plain string literal (and the commas or brackets after it) as adjacent
    literals broken at spaces, one per line: Python joins them. The line as it is otherwise."""
    strings = [t for t in tokens if t.type == tokenize.STRING]
    if len(strings) != 1 or strings[0].start[1] != len(line) - len(line.lstrip()):
        return [line]
    text = strings[0].string
    quote = text[-1]
    if text[0] != quote or text.startswith(quote * 3):  # a prefix (f, b, r) or a triple quote: left alone
        return [line]
    indent, tail = line[:strings[0].start[1]], line[strings[0].end[1]:]
    words = text[1:-1].split(" ")
    lines, current = [], ""
    for word in words:
        if current and len(indent) + len(current) + len(word) + 4 > width:
            lines.append(f"{indent}{quote}{current}{quote}")
            current = ""
        current += word + " "
    lines.append(f"{indent}{quote}{current[:-1]}{quote}{tail}")
    return lines
