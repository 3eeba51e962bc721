"""Reference implementation of the ini module (see commonsformat.md)."""

from __future__ import annotations

from typing import Any

WHITESPACE = " \t"


class IniError(ValueError):
    """A malformed line; the message starts with ``line N: ``."""


def parse(text: str) -> dict[str, dict[str, str]]:
    """The sections of an INI document, each a table of lower-case keys to values."""
    if type(text) is not str:
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    sections: dict[str, dict[str, str]] = {}
    current: str | None = None
    last_key: str | None = None  # set while continuation lines may follow
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw[:-1] if raw.endswith("\r") else raw
        stripped = line.strip(WHITESPACE)
        if last_key is not None and line[:1] in (" ", "\t") and stripped:
            table = sections[current if current is not None else ""]
            table[last_key] += "\n" + stripped
            continue
        last_key = None
        if not stripped or stripped[0] in ";#":
            continue
        if stripped.startswith("["):
            end = stripped.find("]")
            if end < 0:
                raise IniError(f"line {number}: unterminated section header")
            name = stripped[1:end].strip(WHITESPACE)
            if not name:
                raise IniError(f"line {number}: empty section name")
            if stripped[end + 1 :].strip(WHITESPACE):
                raise IniError(f"line {number}: text after section header")
            current = name
            sections.setdefault(name, {})
            continue
        if "=" not in stripped:
            raise IniError(f"line {number}: expected 'key = value'")
        key, _, value = stripped.partition("=")
        key = key.strip(WHITESPACE).lower()
        if not key:
            raise IniError(f"line {number}: empty key")
        section = current if current is not None else ""
        sections.setdefault(section, {})[key] = value.strip(WHITESPACE)
        last_key = key
    return sections


def run_case(data: dict[str, Any]) -> dict[str, Any]:
    """The suite's adapter: one input table in, one observation out."""
    if "texts" in data:
        return {"outputs": [parse(text) for text in data["texts"]]}
    if "file" in data:
        with open(data["file"], encoding="utf-8", newline="") as handle:
            return {"output": parse(handle.read())}
    if "generate_lines" in data:
        count = data["generate_lines"]
        lines = ["[big]", *(f"key{i} = value{i}" for i in range(count))]
        big = parse("\n".join(lines))["big"]
        return {"keys": len(big), "last": big[f"key{count - 1}"]}
    return {"output": parse(data["text"])}
