"""The colour themes: files read into Textual themes over one stylesheet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cer.engine.options import RunOptions
from cer.model import Status
from cer.tui.app import APP_CSS, create_app
from cer.tui.state.themes import COLOURS, ThemeError, find_themes, read_theme

from .helpers import (
    FakeRunner,
    fixed_loader,
    run_screen,
    settle,
    triage_outcome,
    triage_suite,
    wait_until,
)

pytestmark = pytest.mark.anyio


def test_the_shipped_themes_define_every_colour_the_stylesheet_uses() -> None:
    themes = find_themes()
    assert list(themes) == ["dark", "high-contrast", "light"]
    used = set(re.findall(r"\$cer-([\w-]+)", APP_CSS.read_text(encoding="utf-8")))
    assert used <= set(COLOURS)
    for theme in themes.values():
        assert set(theme.variables) == {f"cer-{name}" for name in COLOURS}
    assert themes["light"].base == "textual-light"
    assert themes["dark"].base == "textual-dark"


def test_a_broken_theme_file_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "neon.toml"
    broken.write_text('base = "textual-dark"\n[colors]\npass = "#00ff00"\n', encoding="utf-8")
    with pytest.raises(ThemeError, match=r"neon\.toml: the theme lacks the colours background"):
        read_theme(broken)
    broken.write_text('base = "nord"\n', encoding="utf-8")
    with pytest.raises(ThemeError, match="unknown base theme 'nord'"):
        read_theme(broken)
    broken.write_text("base = \n", encoding="utf-8")
    with pytest.raises(ThemeError, match="cannot read the theme"):
        read_theme(broken)


async def test_themes_are_switched_through_textual() -> None:
    app = create_app(
        Path("evals.toml"),
        RunOptions(impl="calc:evaluate"),
        run=FakeRunner(triage_outcome),
        load=fixed_loader(triage_suite()),
        watch=False,
        theme="light",
    )
    async with app.run_test(size=(100, 24)):
        await settle(app)
        assert app.theme == "light"
        assert app.current_theme.dark is False
        light = run_screen(app).detail_styles().statuses[Status.PASS]
        app.use_theme("high-contrast")
        assert app.theme == "high-contrast" and app.theme == "high-contrast"
        assert app.current_theme.variables["cer-pass"] == "#56b4e9"
        # The new colours reach the panes once Textual has restyled the screen.
        await wait_until(lambda: run_screen(app).detail_styles().statuses[Status.PASS] != light)
