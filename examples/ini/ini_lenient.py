"""A flawed ini parser: lenient where it must refuse, and with the wrong error type.

Lines it does not understand are skipped instead of refused, an unterminated header is
read as a section anyway, and the errors it does raise are plain ``ValueError`` without
the line number. Everything else follows commonsformat.md.
"""

from __future__ import annotations

from typing import Any


def parse(text: str) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {}
    current = ""
    last_key: str | None = None
    for raw in text.split("\n"):
        line = raw[:-1] if raw.endswith("\r") else raw
        stripped = line.strip(" \t")
        if last_key is not None and line[:1] in (" ", "\t") and stripped:
            sections[current][last_key] += "\n" + stripped
            continue
        last_key = None
        if not stripped or stripped[0] in ";#":
            continue
        if stripped.startswith("["):
            name = stripped[1:].split("]", 1)[0].strip(" \t")
            if not name:
                raise ValueError("section name is empty")
            current = name
            sections.setdefault(name, {})
            continue
        if "=" not in stripped:
            continue  # not a key line: ignore it
        key, _, value = stripped.partition("=")
        key = key.strip(" \t").lower()
        if not key:
            raise ValueError("key is empty")
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
