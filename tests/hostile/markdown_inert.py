"""What makes a Markdown page inert, checked by parsing it as GitHub does (CommonMark with
tables and raw HTML): raw HTML only the reports' own, no link or image, no heading but
theirs, no hostile word in plain text, and no raw control character."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from markdown_it import MarkdownIt

PARSER = MarkdownIt("commonmark", {"html": True}).enable("table")
OWN_HTML = ("<details open>", "<details>", "</details>", "<summary>", "</summary>")


def walk(tokens: Iterable[Any]) -> list[Any]:
    """Every token, children included, in order."""
    found = []
    for token in tokens:
        found.append(token)
        found.extend(walk(token.children or []))
    return found


def assert_markdown_inert(text: str, markers: Iterable[str]) -> list[Any]:
    """Fail unless ``text`` is inert (see the module) for the words ``markers`` of the
    hostile text; returns its tokens."""
    words = tuple(markers)
    tokens = walk(PARSER.parse(text))
    for token in tokens:
        assert token.type not in ("link_open", "image"), token
        if token.type == "text":
            assert not any(word in token.content for word in words), token.content
        if token.type == "heading_open":
            assert token.tag in ("h2", "h3", "h4"), token
        if token.type in ("html_block", "html_inline"):
            rest = token.content
            for own in OWN_HTML:
                rest = rest.replace(own, "")
            # what is left is the <code> of an html_inline: escaped text, no other tag
            rest = rest.replace("<code>", "").replace("</code>", "")
            assert "<" not in rest and ">" not in rest, token.content
    assert "\x1b" not in text and "\u202e" not in text
    return tokens
