"""Where things are in the text of a suite file: the lines of its case headers, in the
order of their arrays, and the line of a top-level key. The TOML parser keeps neither,
and every problem a suite has is reported with its line."""

from __future__ import annotations

import re
from collections.abc import Mapping

from cer.model import ARRAY_TO_CASE_CLASS

__all__ = ["CASE_HEADER_LINE", "scan_layout", "scan_layout_carefully", "top_level_line"]

_ARRAY_NAMES = "|".join(ARRAY_TO_CASE_CLASS)
CASE_HEADER_LINE = re.compile(
    rf"""\n[ \t]*+\[\[[ \t]*+(?P<q>["']?)(?P<name>{_ARRAY_NAMES})(?P=q)[ \t]*+\]\]"""
)
# One token of a valid TOML document, for the careful scan. Strings and comments are
# consumed whole so that nothing inside them is mistaken for a header; the order of the
# alternatives matters (triple quotes before single quotes). The text is scanned with a
# newline in front so that every line, the first included, starts with one.
_TOKEN = re.compile(
    rf"""
      \n[ \t]*+
      (?:
          (?P<header>\[\[[ \t]*+(?P<hq>["']?)(?P<hname>{_ARRAY_NAMES})(?P=hq)[ \t]*+\]\])
        | (?P<inline>(?P<iq>["']?)(?P<iname>{_ARRAY_NAMES})(?P=iq)[ \t]*+=[ \t]*+\[)
        | (?P<table>\[)
      )
    | \"\"\"(?:[^"\\]++|\\[\s\S]|\"{{1,2}}+(?!\"))*+\"{{3,5}}
    | '''[\s\S]*?'{{3,5}}
    | "[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"
    | '[^'\n]*+'
    | \#[^\n]*+
    """,
    re.VERBOSE,
)


def top_level_line(key: str, source: str) -> int | None:
    """The first line that declares the top-level ``key`` (a header or an assignment),
    found by a plain search; None when the spelling cannot be found that way."""
    name = re.escape(key)
    pattern = re.compile(
        rf"""^[ \t]*(?:\[\[?[ \t]*(?P<q1>["']?){name}(?P=q1)[ \t]*[\].]"""
        rf"""|(?P<q2>["']?){name}(?P=q2)[ \t]*[=.])""",
        re.MULTILINE,
    )
    match = pattern.search(source)
    if match is None:
        return None
    return source.count("\n", 0, match.start()) + 1


def scan_layout(source: str, counts: Mapping[str, int]) -> tuple[list[str], dict[str, list[int]]]:
    """Find where the case arrays are declared in the text of a valid TOML document.

    Returns the arrays in the order of their first appearance and, for each array, the
    1-based lines of its ``[[...]]`` headers; the TOML parser keeps neither. ``counts``
    holds how many entries the parser found in each array. A plain search for header
    lines is enough when it finds exactly that many: a header-like line inside a
    multi-line string would have made the count too high (every spelling of a header
    but one with escapes in a quoted key is found). Otherwise the careful scan, which
    reads every string and comment, decides; that keeps large suites fast.
    """
    text = "\n" + source
    order: list[str] = []
    lines: dict[str, list[int]] = {}
    line = 0
    counted_to = 0
    for match in CASE_HEADER_LINE.finditer(text):
        start = match.start() + 1
        line += text.count("\n", counted_to, start)
        counted_to = start
        name = match["name"]
        lines.setdefault(name, []).append(line)
        if name not in order:
            order.append(name)
    if all(len(lines.get(name, ())) == count for name, count in counts.items()):
        return order, lines
    return scan_layout_carefully(text)


def scan_layout_carefully(text: str) -> tuple[list[str], dict[str, list[int]]]:
    """Like :func:`scan_layout`, but skipping strings and comments token by token.

    ``text`` is the document with a newline in front. The inline form ``cases = [``
    counts for the order only before the first table header, where it is a top-level key.
    """
    order: list[str] = []
    lines: dict[str, list[int]] = {}
    in_root = True
    line = 0
    counted_to = 0
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "header":
            start = match.start() + 1
            line += text.count("\n", counted_to, start)
            counted_to = start
            name = match["hname"]
            lines.setdefault(name, []).append(line)
            if name not in order:
                order.append(name)
            in_root = False
        elif kind == "table":
            in_root = False
        elif kind == "inline" and in_root:
            name = match["iname"]
            if name not in order:
                order.append(name)
    return order, lines
