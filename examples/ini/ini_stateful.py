"""A flawed ini parser: its parsing state lives in module globals.

The sections found so far, the current section and the key a continuation line would
extend are module-level variables that a call never resets, so a second document is
parsed on top of the first. A single parse is correct; only a process that parses
twice can see the flaw (each case of the suite runs in a fresh process, so the suite
parses twice inside one case to observe it).
"""

from __future__ import annotations

from typing import Any


class IniError(ValueError):
    """A malformed line; the message starts with ``line N: ``."""


_sections: dict[str, dict[str, str]] = {}
_current = ""
_last_key: str | None = None


def parse(text: str) -> dict[str, dict[str, str]]:
    global _current, _last_key
    if type(text) is not str:
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw[:-1] if raw.endswith("\r") else raw
        stripped = line.strip(" \t")
        if _last_key is not None and line[:1] in (" ", "\t") and stripped:
            _sections[_current][_last_key] += "\n" + stripped
            continue
        _last_key = None
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
            _current = name
            _sections.setdefault(name, {})
            continue
        if "=" not in stripped:
            raise IniError(f"line {number}: expected 'key = value'")
        key, _, value = stripped.partition("=")
        key = key.strip(" \t").lower()
        if not key:
            raise IniError(f"line {number}: empty key")
        _sections.setdefault(_current, {})[key] = value.strip(" \t")
        _last_key = key
    return _sections


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
