"""Undo and redo for the app's chain edits: snapshots of the chain as plain data.

Example:
    >>> history = History()
    >>> history.record({"seed": 1, "steps": []})     # the chain before an edit
    >>> history.undo({"seed": 2, "steps": []})       # back from the chain after it
    {'seed': 1, 'steps': []}
    >>> history.redo({"seed": 1, "steps": []})
    {'seed': 2, 'steps': []}
"""
from __future__ import annotations

import copy


class History:
    """Two stacks of chain snapshots (`Chain.to_dict()`): `record(before)` after each edit, then
    `undo(now)` and `redo(now)` return the snapshot to restore (None when there is none). A new
    edit clears what could be redone; at most `limit` edits are kept."""

    def __init__(self, limit: int = 200):
        self.limit = limit
        self._undo: list[dict] = []
        self._redo: list[dict] = []

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    def record(self, before: dict) -> None:
        """An edit was made; `before` is the chain as it was."""
        if self._undo and self._undo[-1] == before:
            return  # the same state twice (an edit that changed nothing)
        self._undo.append(copy.deepcopy(before))
        del self._undo[:-self.limit]
        self._redo.clear()

    def undo(self, now: dict) -> dict | None:
        if not self._undo:
            return None
        self._redo.append(copy.deepcopy(now))
        return self._undo.pop()

    def redo(self, now: dict) -> dict | None:
        if not self._redo:
            return None
        self._undo.append(copy.deepcopy(now))
        return self._redo.pop()
