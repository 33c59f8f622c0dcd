"""Exceptions the workbench raises. Each message names the problem and the fix."""
import reprlib

_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxtuple, _SHORT.maxdict = 3, 6, 6, 6
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 80, 80, 40


def show(value) -> str:
    """A bounded repr for error messages: hostile input (alias bombs, deep nesting, huge
    numbers) must not make the message itself huge.

    Example:
        >>> show(list(range(100)))
        '[0, 1, 2, 3, 4, 5, ...]'
    """
    try:
        return _SHORT.repr(value)
    except Exception:  # a hostile __repr__ must not replace the real error
        return f"<{type(value).__name__}>"


class WorkbenchError(Exception):
    """Base class for every error the workbench raises on purpose."""


class ChainError(WorkbenchError, ValueError):
    """A chain, a step or one of its parameters is invalid.

    Example:
        >>> from workbench import Chain
        >>> Chain.from_dict({"steps": [{"op": "Rotate", "p": 2}]})
        Traceback (most recent call last):
        ...
        workbench.errors.ChainError: step 1 (Rotate): p must be a number in [0, 1], got 2
    """


class InputError(WorkbenchError, ValueError):
    """Images given to the workbench cannot be used as they are (dtype, layout, channels, files)."""


class UnsupportedOpError(WorkbenchError, NotImplementedError):
    """An op cannot be expressed on the chosen backend."""


class ExportError(WorkbenchError, ValueError):
    """Generated code could not be produced or written safely."""


class InsufficientMemoryError(WorkbenchError, MemoryError):
    """A chain would need more memory than the machine has available (see backends/memory.py);
    nothing was run."""


class EstimateCancelled(WorkbenchError):
    """A throughput measurement was stopped before it finished (its progress callback raised
    this, e.g. from the app's cancel button); the measuring process is stopped with it."""
