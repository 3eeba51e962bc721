"""A flawed ini parser: correct, but quadratic.

It walks the text by offsets and works out each line's number by counting the line
breaks before it, so the cost grows with the square of the document's length. Every
answer follows commonsformat.md; only the timing case sees the difference.
"""

from __future__ import annotations

from typing import Any


class IniError(ValueError):
    """A malformed line; the message starts with ``line N: ``."""


def parse(text: str) -> dict[str, dict[str, str]]:
    if type(text) is not str:
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    sections: dict[str, dict[str, str]] = {}
    current = ""
    last_key: str | None = None
    offset = 0
    for raw in text.split("\n"):
        number = text.count("\n", 0, offset) + 1
        offset += len(raw) + 1
        line = raw[:-1] if raw.endswith("\r") else raw
        stripped = line.strip(" \t")
        if last_key is not None and line[:1] in (" ", "\t") and stripped:
            sections[current][last_key] += "\n" + stripped
            continue
        last_key = None
        if not stripped or stripped[0] in ";#":
            continue
        if stripped.startswith("["):
            end = stripped.find("]")
            if end < 0:
                raise IniError(f"line {number}: unterminated section header")
            name = stripped[1:end].strip(" \t")
            if not name:
                raise IniError(f"line {number}: empty section name")
            if stripped[end + 1 :].strip(" \t"):
                raise IniError(f"line {number}: text after section header")
            current = name
            sections.setdefault(name, {})
            continue
        if "=" not in stripped:
            raise IniError(f"line {number}: expected 'key = value'")
        key, _, value = stripped.partition("=")
        key = key.strip(" \t").lower()
        if not key:
            raise IniError(f"line {number}: empty key")
        sections.setdefault(current, {})[key] = value.strip(" \t")
        last_key = key
    return sections


def run_case(data: dict[str, Any]) -> dict[str, Any]:
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
