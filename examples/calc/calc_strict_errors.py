"""A flawed calc implementation that gets the arithmetic right and the edges wrong.

Division by zero raises ``ValueError`` for ``/`` and ``//`` and a differently worded
``ZeroDivisionError`` for ``%``; only spaces count as whitespace, so a tab is rejected.
"""

from __future__ import annotations

from typing import ClassVar

from calc_ref import Evaluator, Number, read_source


class StrictErrorsEvaluator(Evaluator):
    """The reference evaluator with its own ideas about errors and whitespace."""

    WHITESPACE: ClassVar[str] = " "

    def divide(self, a: Number, b: Number) -> Number:
        if b == 0:
            raise ValueError("division by zero")
        return float(a / b)

    def floor_divide(self, a: Number, b: Number) -> Number:
        if b == 0:
            raise ValueError("division by zero")
        return a // b

    def modulo(self, a: Number, b: Number) -> Number:
        if b == 0:
            raise ZeroDivisionError("modulo by zero")
        return a % b


def evaluate(expr: str | None = None, *, file: str | None = None) -> int | float:
    """Evaluate ``expr`` (or the expression in ``file``) with non-conforming errors."""
    return StrictErrorsEvaluator(read_source(expr, file)).evaluate()
