"""What a workbench module was built with: every class in this package keeps its constructor's
arguments (`built_with`), so that `Chain.from_kornia` reads an op's settings back from exactly what
the exported code passed (the inverse on the op's Kornia lowering, `KorniaLowering.from_module`),
never from wherever a module happens to store them.
"""
from __future__ import annotations

import functools
import inspect


class RecordsArguments:
    """Mixin: after `__init__`, `self.built_with` maps every constructor argument to its value
    (defaults filled in, `p` included); a subclass's own arguments win over its parent's.

    Example:
        >>> class Blur(RecordsArguments):
        ...     def __init__(self, kernel_size=(3, 7), p=0.5):
        ...         pass
        >>> Blur(p=0.2).built_with
        {'kernel_size': (3, 7), 'p': 0.2}
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return
        signature = inspect.signature(init)

        @functools.wraps(init)
        def recording_init(self, *args, **kw):
            init(self, *args, **kw)
            bound = signature.bind(self, *args, **kw)
            bound.apply_defaults()
            self.built_with = dict(list(bound.arguments.items())[1:])

        cls.__init__ = recording_init
