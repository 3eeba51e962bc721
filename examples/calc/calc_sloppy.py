"""A flawed calc implementation with the slips a quickly written evaluator tends to make.

It parses and rejects like the reference, but ``/`` returns an int when the division is
exact, ``**`` groups to the left, and unary minus binds tighter than ``**``.
"""

from __future__ import annotations

from typing import ClassVar

from calc_ref import Evaluator, Number, read_source


class SloppyEvaluator(Evaluator):
    """The reference evaluator with three plausible mistakes."""

    BINARY: ClassVar[dict[str, tuple[int, bool]]] = {
        **Evaluator.BINARY,
        "**": (4, False),
    }
    UNARY_MINUS: ClassVar[int] = 5

    def divide(self, a: Number, b: Number) -> Number:
        """Exact integer quotients come back as ints."""
        if b == 0:
            raise ZeroDivisionError("division by zero")
        if isinstance(a, int) and isinstance(b, int) and a % b == 0:
            return a // b
        return a / b


def evaluate(expr: str | None = None, *, file: str | None = None) -> int | float:
    """Evaluate ``expr`` (or the expression in ``file``), sloppily."""
    return SloppyEvaluator(read_source(expr, file)).evaluate()
