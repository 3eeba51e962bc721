"""Reference implementation of the calc module: a safe arithmetic expression evaluator.

A hand-written tokenizer feeds a precedence-climbing parser that computes the value as
it parses. Nothing is ever handed to ``eval``, ``compile`` or ``ast``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import ClassVar, NamedTuple

Number = int | float

DIGITS = "0123456789"
OPERATORS = ("**", "//", "+", "-", "*", "/", "%", "(", ")")
"""Operator tokens, longest first so that ``**`` and ``//`` win over ``*`` and ``/``."""

MAX_DEPTH = 256
"""Deepest accepted nesting of parentheses, unary minus signs and ``**`` right operands."""

MAX_INT_DIGITS = 10_000
INT_LIMIT = 10**MAX_INT_DIGITS
"""Integers with more than ``MAX_INT_DIGITS`` digits (``abs(n) >= INT_LIMIT``) are refused."""

_CHUNK = 4_000
"""Digits converted at a time, below the interpreter's int/str conversion limit."""


class Token(NamedTuple):
    """One lexical token: ``kind`` is ``"number"``, ``"op"`` or ``"end"``."""

    kind: str
    text: str
    pos: int

    def describe(self) -> str:
        """How error messages quote the token."""
        return "end of input" if self.kind == "end" else repr(self.text)


def tokenize(source: str, whitespace: str = " \t") -> list[Token]:
    """Split ``source`` into tokens, ending with an ``end`` token.

    Only the characters in ``whitespace`` separate tokens; anything that is neither a
    number, an operator nor whitespace is rejected.
    """
    tokens: list[Token] = []
    i, n = 0, len(source)
    while i < n:
        ch = source[i]
        if ch in whitespace:
            i += 1
            continue
        if ch in DIGITS:
            start = i
            while i < n and source[i] in DIGITS:
                i += 1
            if i + 1 < n and source[i] == "." and source[i + 1] in DIGITS:
                i += 1
                while i < n and source[i] in DIGITS:
                    i += 1
            tokens.append(Token("number", source[start:i], start))
            continue
        for op in OPERATORS:
            if source.startswith(op, i):
                tokens.append(Token("op", op, i))
                i += len(op)
                break
        else:
            raise ValueError(f"unexpected {ch!r} at position {i}")
    tokens.append(Token("end", "", n))
    return tokens


def parse_int(digits: str) -> int:
    """Convert a run of ASCII digits to an int, however long, chunk by chunk."""
    value = 0
    for start in range(0, len(digits), _CHUNK):
        chunk = digits[start : start + _CHUNK]
        value = value * 10 ** len(chunk) + int(chunk)
    return value


def read_source(expr: object, file: object) -> str:
    """The expression text named by exactly one of ``expr`` and ``file``."""
    if (expr is None) == (file is None):
        raise TypeError("evaluate() takes exactly one of expr or file")
    if expr is not None:
        if not isinstance(expr, str):
            raise TypeError(f"expr must be a str, not {type(expr).__name__}")
        return expr
    if not isinstance(file, str | os.PathLike):
        raise TypeError(f"file must be a path, not {type(file).__name__}")
    text = Path(file).read_text(encoding="utf-8")
    for line_break in ("\r\n", "\n"):
        if text.endswith(line_break):
            return text[: -len(line_break)]
    return text


class Evaluator:
    """Parses and evaluates one expression; subclasses may change the grammar's knobs."""

    WHITESPACE: ClassVar[str] = " \t"
    BINARY: ClassVar[dict[str, tuple[int, bool]]] = {
        "+": (1, False),
        "-": (1, False),
        "*": (2, False),
        "/": (2, False),
        "//": (2, False),
        "%": (2, False),
        "**": (4, True),
    }
    """Binary operator -> (precedence, right-associative)."""
    UNARY_MINUS: ClassVar[int] = 3
    """Unary minus binds tighter than ``*`` but looser than a ``**`` on its right."""

    def __init__(self, source: str) -> None:
        self._source = source
        self._tokens: list[Token] = []
        self._index = 0
        self._depth = 0

    def evaluate(self) -> Number:
        """The value of the whole expression."""
        if not self._source.strip(self.WHITESPACE):
            raise ValueError("empty expression")
        self._tokens = tokenize(self._source, self.WHITESPACE)
        try:
            value = self._expression(0)
        except RecursionError:
            raise ValueError("expression too deeply nested") from None
        token = self._peek()
        if token.kind != "end":
            raise self._unexpected(token)
        return value

    # Parsing

    def _peek(self) -> Token:
        return self._tokens[self._index]

    def _advance(self) -> Token:
        token = self._tokens[self._index]
        if token.kind != "end":
            self._index += 1
        return token

    def _unexpected(self, token: Token) -> ValueError:
        where = "" if token.kind == "end" else f" at position {token.pos}"
        return ValueError(f"unexpected {token.describe()}{where}")

    def _enter(self) -> None:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise ValueError(f"expression too deeply nested (more than {MAX_DEPTH} levels)")

    def _expression(self, min_precedence: int) -> Number:
        """Precedence climbing: an operand, then binary operators binding at least this tightly."""
        value = self._operand()
        while True:
            token = self._peek()
            if token.kind != "op" or token.text not in self.BINARY:
                return value
            precedence, right = self.BINARY[token.text]
            if precedence < min_precedence:
                return value
            self._advance()
            if right:
                self._enter()
                rhs = self._expression(precedence)
                self._depth -= 1
            else:
                rhs = self._expression(precedence + 1)
            value = self.apply(token.text, value, rhs)

    def _operand(self) -> Number:
        token = self._advance()
        if token.kind == "number":
            return self.number(token.text)
        if token.text == "-":
            self._enter()
            value = self._expression(self.UNARY_MINUS)
            self._depth -= 1
            return self.checked(-value)
        if token.text == "(":
            self._enter()
            value = self._expression(0)
            self._depth -= 1
            closing = self._advance()
            if closing.text != ")" or closing.kind != "op":
                raise self._unexpected(closing)
            return value
        raise self._unexpected(token)

    # Arithmetic

    def number(self, text: str) -> Number:
        """The value of a numeric literal: a decimal point makes it a float."""
        if "." in text:
            return self.checked(float(text))
        if len(text.lstrip("0")) > MAX_INT_DIGITS:
            raise ValueError("result too large")
        return self.checked(parse_int(text))

    def checked(self, value: Number) -> Number:
        """``value`` itself, unless it is out of the supported range."""
        if isinstance(value, float) and math.isinf(value):
            raise ValueError("result too large")
        if isinstance(value, int) and abs(value) >= INT_LIMIT:
            raise ValueError(f"result too large (more than {MAX_INT_DIGITS} digits)")
        return value

    def apply(self, op: str, a: Number, b: Number) -> Number:
        """The result of the binary operator ``op`` on ``a`` and ``b``."""
        try:
            if op == "+":
                return self.checked(a + b)
            if op == "-":
                return self.checked(a - b)
            if op == "*":
                return self.checked(a * b)
            if op == "/":
                return self.checked(self.divide(a, b))
            if op == "//":
                return self.checked(self.floor_divide(a, b))
            if op == "%":
                return self.checked(self.modulo(a, b))
            if op == "**":
                return self.checked(self.power(a, b))
        except OverflowError:
            raise ValueError("result too large") from None
        raise ValueError(f"unexpected {op!r}")

    def divide(self, a: Number, b: Number) -> Number:
        """True division: always a float."""
        if b == 0:
            raise ZeroDivisionError("division by zero")
        return float(a / b)

    def floor_divide(self, a: Number, b: Number) -> Number:
        """Floor division, rounding toward negative infinity."""
        if b == 0:
            raise ZeroDivisionError("division by zero")
        return a // b

    def modulo(self, a: Number, b: Number) -> Number:
        """Remainder of floor division; it takes the sign of the divisor."""
        if b == 0:
            raise ZeroDivisionError("division by zero")
        return a % b

    def power(self, a: Number, b: Number) -> Number:
        """``a`` raised to ``b``; refuses results too large to compute in bounded time."""
        if a == 0 and b < 0:
            raise ZeroDivisionError("division by zero")
        if a < 0 and isinstance(b, float) and not b.is_integer():
            raise ValueError("result is not a real number")
        exact = isinstance(a, int) and isinstance(b, int)
        if exact and b > 0 and abs(a) > 1 and b * math.log10(abs(a)) > MAX_INT_DIGITS + 1:
            raise ValueError(f"result too large (more than {MAX_INT_DIGITS} digits)")
        result: Number = a**b
        return result


def evaluate(expr: str | None = None, *, file: str | None = None) -> int | float:
    """Evaluate an arithmetic expression given as text (``expr``) or in a file (``file``).

    Exactly one of ``expr`` and ``file`` must be given. Integer arithmetic stays exact
    and integral; ``/`` and any decimal literal produce floats.
    """
    return Evaluator(read_source(expr, file)).evaluate()
