"""Eval suites: an ``evals.toml`` read, validated, cached and checked.

:mod:`cer.suite.loader` reads a file into a frozen :class:`~cer.model.Suite`,
:mod:`.layout` finds the lines of its cases, :mod:`.cache` keeps validated suites,
:mod:`.fixtures` resolves ``fixture://`` names and :mod:`.selection` picks the cases a
run executes. The names the documentation tells users to
import are here, loaded when first used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cer.suite.loader import SuiteError, load_suite

__all__ = ["SuiteError", "load_suite"]

_WHERE = {"SuiteError": "cer.suite.loader", "load_suite": "cer.suite.loader"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
