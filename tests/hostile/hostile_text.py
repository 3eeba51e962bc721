"""The corpus of hostile strings an implementation can say, one per class of attack on
the surfaces that show or store what it said (see docs/trust.md, "What the
implementation says is only data").

Each entry is a string a value, a reason, a message, captured output or a file name can
hold. A surface passes when none of the :data:`ACTIVE` characters reaches it raw and
nothing crashes; :func:`assert_inert` checks a piece of text for that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

CORPUS: dict[str, str] = {
    "esc-clear": "\x1b[2J\x1b[Hall passed",
    "esc-colour": "\x1b[32mPASS\x1b[0m",
    "osc-title": "\x1b]0;owned\x07",
    "osc-hyperlink": "\x1b]8;;file:///etc/passwd\x1b\\click\x1b]8;;\x1b\\",
    "bel": "ding\x07",
    "csi-8bit": "\x9b2J\x9b32m",
    "bidi-override": "\u202eSSAP\u202c",
    "bidi-isolate": "\u2066tail\u2069",
    "zero-width": "pa\u200bss\ufeff",
    "line-separator": "one\u2028two",
    "markup-bold": "[b]4[/b]",
    "markup-close": "[/nope]",
    "markup-action": "[@click=app.quit]quit[/]",
    "markup-link": "[link=https://example.invalid]x[/link]",
    "del-newline": "\x7f\n",
    "lone-surrogate": "\ud800",
    "nul": "a\x00b",
    "carriage-return": "FAIL\rPASS",
    "backspace": "FAIL\b\b\b\bPASS",
    "toml-breakout": '"""\n[[cases]]\nname = "evil"\n',
    "html": "<script>alert(1)</script>&amp;",
    "workflow-command": "::error::forged\n::stop-commands::x",
    "long-line": "x" * 100_000,
}
"""Hostile strings by class."""

ACTIVE = (
    "\x00",
    "\x07",
    "\x08",
    "\x1b",
    "\x7f",
    "\x9b",
    "\r",
    "\u202e",
    "\u202c",
    "\u2066",
    "\u2069",
    "\u200b",
    "\ufeff",
    "\u2028",
    "\ud800",
)
"""Characters that act on a terminal (or break an encoder) when they reach it raw."""

MARKUP = ("markup-bold", "markup-close", "markup-action", "markup-link")
"""The classes that are Textual markup: a screen must show them character for character."""


def inert_problems(text: str, where: str = "") -> list[str]:
    """Which :data:`ACTIVE` characters ``text`` holds raw (empty when it is inert)."""
    return [f"{where}: raw {char!r}" for char in ACTIVE if char in text]


def assert_inert(text: str, where: str = "") -> None:
    """Fail when ``text`` holds a raw :data:`ACTIVE` character."""
    problems = inert_problems(text, where)
    assert not problems, problems


def python_literal(value: str) -> str:
    """``value`` as a Python literal that writes no raw control character into source
    (lone surrogates included)."""
    return ascii(value)


def ids() -> Iterable[str]:
    return CORPUS.keys()


def implementation(corpus: Mapping[str, str], *, stderr: bool = True) -> str:
    """The source of ``f(expr)`` for ``expr = "KIND:NAME"``: it prints ``corpus[NAME]``
    (to stdout, and to stderr unless told not to), then returns it (``value``) or raises
    it (``raise``)."""
    to_stderr = '    os.write(2, text.encode("utf-8", "surrogatepass"))\n' if stderr else ""
    return (
        f"import os\n\nCORPUS = {dict(corpus)!a}\n\n\n"
        "def f(expr):\n"
        '    kind, _, name = expr.partition(":")\n'
        "    text = CORPUS[name]\n"
        '    os.write(1, text.encode("utf-8", "surrogatepass"))\n'
        f"{to_stderr}"
        '    if kind == "raise":\n'
        "        raise ValueError(text)\n"
        "    return text\n"
    )


def suite_lines(names: Iterable[str], *, verifies: str | None = None) -> list[str]:
    """A suite with a ``value-NAME`` and a ``raise-NAME`` case for each of ``names``,
    each expecting ``"ok"`` (so every one fails and shows what was said)."""
    lines = ['commonsformat_evals = "0.2"', 'target = "hostile"', ""]
    for kind in ("value", "raise"):
        for name in names:
            lines += [
                "[[cases]]",
                f'name = "{kind}-{name}"',
                'category = "functional"',
                f'input = {{ expr = "{kind}:{name}" }}',
                'expect = { output = "ok" }',
                *([f'verifies = ["{verifies}"]'] if verifies else []),
                "",
            ]
    return lines
