"""docs/tui.md lists every key exactly as the app binds it."""

from __future__ import annotations

from pathlib import Path

from cer.tui.keys import help_rows

DOCS = Path(__file__).resolve().parents[2] / "docs" / "tui.md"


def test_every_key_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for keys, help_text in help_rows():
        assert f"| `{keys}` | {help_text} |" in text, keys


def test_the_keys_of_several_implementations_are_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    extra = [row for row in help_rows(several=True) if row not in help_rows()]
    assert extra == [("m", extra[0][1])] and "Matrix view" in extra[0][1]
    for keys, help_text in extra:
        assert f"| `{keys}` | {help_text} |" in text, keys


def test_the_synopsis_names_every_option_of_cer_tui() -> None:
    from cer.tui.__main__ import build_parser

    text = DOCS.read_text(encoding="utf-8")
    synopsis = text.split("## Arguments", 1)[1].strip().split("\n\n", 1)[0]
    assert synopsis.startswith("`cer-tui [SUITE]")
    for action in build_parser()._actions:
        if action.option_strings and "--help" not in action.option_strings:
            assert any(option in synopsis for option in action.option_strings), action.dest
