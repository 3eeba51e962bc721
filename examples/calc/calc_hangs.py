"""A flawed calc implementation that hangs: its first pass over the expression skips
spaces, but on a tab it forgets to move on, so any expression with a tab loops forever.

Run it with a short timeout: each timed-out case shows the line it was stopped on.

    cer run examples/calc/evals.toml --impl calc_hangs:evaluate --timeout 1 -k tabs
"""

from __future__ import annotations

from calc_ref import Evaluator, Number, read_source


def count_symbols(source: str) -> int:
    """How many characters of ``source`` are not blanks."""
    count = 0
    i = 0
    while i < len(source):
        if source[i] == " ":
            i += 1
        elif source[i] == "\t":
            continue  # the flaw: a tab is never stepped over
        else:
            count += 1
            i += 1
    return count


def evaluate(expr: str | None = None, *, file: str | None = None) -> Number:
    """Evaluate ``expr`` (or the expression in ``file``), after a first pass that hangs
    on a tab."""
    source = read_source(expr, file)
    count_symbols(source)
    return Evaluator(source).evaluate()
