"""cer: verify implementations against Commons Format eval suites.

The names below are cer's public Python interface, the only ones its documentation tells
users to import (``from cer import load_suite, run_suite, RunOptions``; the
implementation is ``RunOptions(impl="MODULE:ATTR")`` or a callable object itself,
``RunOptions(implementation=f)``); every other
module and name is internal and may change. They are loaded when first used, so that
importing ``cer`` (which every worker, every ``cer`` command and the pytest plugin do)
costs nothing. The types the public functions return (``Suite``, ``RunResult``,
``Matrix``, ...) are exported beside them, and the package ships ``py.typed``, so that a
type checker reads cer's own annotations.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cer.engine.options import RunOptions
    from cer.engine.runner import run_suite
    from cer.engine.side_by_side import run_side_by_side
    from cer.history.database import History, default_history_path
    from cer.history.records import HistoryError, HistoryUntrusted, RunDiff, RunRecord
    from cer.model import Case, CaseResult, RunResult, Status, Suite
    from cer.results.matrix import Known, Matrix, build_matrix, matrix_to_dict
    from cer.suite.loader import SuiteError, load_suite
    from cer.wire.caseview import CaseView

__version__ = "0.1.0"

__all__ = [
    "Case",
    "CaseResult",
    "CaseView",
    "History",
    "HistoryError",
    "HistoryUntrusted",
    "Known",
    "Matrix",
    "RunDiff",
    "RunOptions",
    "RunRecord",
    "RunResult",
    "Status",
    "Suite",
    "SuiteError",
    "__version__",
    "build_matrix",
    "default_history_path",
    "load_suite",
    "matrix_to_dict",
    "run_side_by_side",
    "run_suite",
]

_WHERE = {
    "Case": "cer.model",
    "CaseResult": "cer.model",
    "CaseView": "cer.wire.caseview",
    "History": "cer.history.database",
    "HistoryError": "cer.history.records",
    "HistoryUntrusted": "cer.history.records",
    "Known": "cer.results.matrix",
    "Matrix": "cer.results.matrix",
    "RunDiff": "cer.history.records",
    "RunOptions": "cer.engine.options",
    "RunRecord": "cer.history.records",
    "RunResult": "cer.model",
    "Status": "cer.model",
    "Suite": "cer.model",
    "SuiteError": "cer.suite.loader",
    "build_matrix": "cer.results.matrix",
    "default_history_path": "cer.history.database",
    "load_suite": "cer.suite.loader",
    "matrix_to_dict": "cer.results.matrix",
    "run_side_by_side": "cer.engine.side_by_side",
    "run_suite": "cer.engine.runner",
}
"""Where each public name is defined."""


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for."""
    if name in _WHERE:
        value = getattr(import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
