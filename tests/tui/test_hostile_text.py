"""The TUI shows what an implementation sends, and never lets it act on the terminal:
control sequences, bidi controls and lone surrogates appear as escapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from cer.engine.options import RunOptions
from cer.model import Status
from cer.tui.app import create_app
from cer.tui.widgets.text_pane import TextPane

from .helpers import run_screen, screen_text, settle

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HOSTILE = "\\x1b[2J\\x1b[32mall passed\\x1b[0m \\u202e \\ud800 \\x07"

SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "raises"
category = "functional"
input = { x = 1 }
expect = { output = "ok" }

[[cases]]
name = "returns"
category = "functional"
input = { x = 2 }
expect = { output = "ok" }
"""

IMPL = f"""
import os
def f(x):
    os.write(1, "{HOSTILE}".encode("utf-8", "surrogatepass"))
    if x == 1:
        raise ValueError("{HOSTILE}")
    return "{HOSTILE}"
"""

ACTIVE = ("\x1b", "\x07", "\u202e", "\ud800")


async def test_hostile_text_is_shown_as_escapes(tmp_path: Path) -> None:
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "hostile_tui.py").write_text(IMPL, encoding="utf-8")
    app = create_app(tmp_path / "evals.toml", RunOptions(impl="hostile_tui:f"), watch=False)
    async with app.run_test(size=(140, 36)):
        await settle(app)
        statuses = {row.name: row.status for row in app.session.board.rows}
        assert statuses == {"raises": Status.ERRORED, "returns": Status.FAIL}
        for name in ("raises", "returns"):
            assert run_screen(app).case_list.select_name(name)
            await settle(app)
            shown = str(app.query_one("#reason-pane", TextPane).content)
            for char in ACTIVE:
                assert char not in shown, (name, shown)
            text = screen_text(app)
            for char in ACTIVE:
                assert char not in text, (name, char)
        row = app.session.board.row("raises")
        assert row is not None and row.result is not None
        assert "\\x1b[2J" in (row.result.reason or "")
