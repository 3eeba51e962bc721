"""Run history: every run recorded in an embedded SQLite database, and read back.

:mod:`cer.history.database` is the open database (:class:`History`), which records
runs and asks :mod:`.queries` its questions, both through one connection
(:mod:`.access`); :mod:`.schema` the schema it expects, :mod:`.records` the frozen values
it gives back, :mod:`.budget` what it stores of a run's evidence, :mod:`.gaps` the runs
it could not record. The names the documentation tells users to import are here,
loaded when first used, so that importing one module of the package costs no more than
that module.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cer.history.database import History, default_history_path
    from cer.history.records import HistoryError

__all__ = ["History", "HistoryError", "default_history_path"]

_WHERE = {
    "History": "cer.history.database",
    "HistoryError": "cer.history.records",
    "default_history_path": "cer.history.database",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
