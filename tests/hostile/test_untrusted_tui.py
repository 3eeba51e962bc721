"""What the implementation says is only data in cer-tui: every class of
:mod:`hostile_text`, returned, raised and printed by a real implementation, through the
case list, every detail pane, toasts, the drafts screen and its confirmation dialog
(``App.run_test`` pilots). Nothing may act on the terminal, markup must show as the
characters it is, and nothing may crash the app."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_text import CORPUS, MARKUP, assert_inert, implementation, suite_lines

from cer.engine.options import RunOptions
from cer.review.drafts import drafts_path, load_drafts
from cer.suite.loader import load_suite
from cer.tui.app import create_app
from cer.tui.plain import notify
from cer.tui.screens.drafts import ConfirmScreen, DraftsScreen
from cer.tui.state.details import PANES
from cer.tui.widgets.detail_panes import DetailPanes
from tui.helpers import run_screen, screen_text, settle, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SIZE = (160, 48)

IMPL = implementation(CORPUS, stderr=False)

SHOWN = [name for name in CORPUS if name != "long-line"]
"""The classes the list holds (the long line only makes the screens slower)."""

EVERY_PANE = (*MARKUP, "esc-clear", "csi-8bit", "bidi-override", "lone-surrogate", "nul")
"""The classes whose cases are looked at in every pane (the others in the first)."""

DRAFTED = (*MARKUP, "esc-clear", "bidi-override", "del-newline")
"""The classes the drafts screen observes, confirms and approves."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _module(tmp_path: Path, drafts: bool = False) -> Path:
    lines = suite_lines(SHOWN)
    suite = tmp_path / "evals.toml"
    suite.write_text("\n".join(lines), encoding="utf-8")
    (tmp_path / "hostile_tui_impl.py").write_text(IMPL, encoding="ascii")
    if drafts:
        entries = []
        for name in DRAFTED:
            entries += [
                "[[drafts]]",
                f'name = "draft-{name}"',
                'constraint = "c"',
                'enforceability = "needs-input"',
                'why = "by hand"',
                'array = "cases"',
                'category = "functional"',
                f'input = {{ expr = "value:{name}" }}',
                "",
            ]
        drafts_path(suite).write_text("\n".join(entries), encoding="utf-8")
    return suite


async def test_the_list_and_every_pane_show_hostile_text_as_data(tmp_path: Path) -> None:
    suite = _module(tmp_path)
    options = RunOptions(impl="hostile_tui_impl:f", timeout=10)
    app = create_app(suite, options, watch=False, history=tmp_path / "h.sqlite")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(app)
        assert len(app.session.board.rows) == 2 * len(SHOWN)
        assert_inert(screen_text(app), "list")
        panes = app.query_one(DetailPanes)
        for kind in ("value", "raise"):
            for name in SHOWN:
                case = f"{kind}-{name}"
                assert run_screen(app).case_list.select_name(case)
                await settle(app)
                seen = screen_text(app)
                assert_inert(seen, f"{case} {panes.active}")
                for _ in PANES[1:] if name in EVERY_PANE else ():
                    await pilot.press("tab")
                    await pilot.pause()
                    text = screen_text(app)
                    assert_inert(text, f"{case} {panes.active}")
                    seen += text
                if name in EVERY_PANE:
                    await pilot.press("tab")  # back to the first pane
                    await pilot.pause()
                if name in MARKUP:
                    assert CORPUS[name] in seen, (case, CORPUS[name])
        # Toasts: whoever posts one, and with whatever text, it shows as it is.
        for name in SHOWN:
            app.notify(CORPUS[name], title=CORPUS[name])
            notify(app, CORPUS[name], title=CORPUS[name])
            await pilot.pause()
            assert_inert(screen_text(app), f"toast {name}")
            if name in MARKUP:
                assert CORPUS[name] in screen_text(app), name


async def test_the_drafts_screen_and_its_dialog_keep_markup_as_text(tmp_path: Path) -> None:
    suite = _module(tmp_path, drafts=True)
    options = RunOptions(impl="hostile_tui_impl:f", timeout=10)
    app = create_app(suite, options, watch=False, history=tmp_path / "h.sqlite")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(app)
        await pilot.press("D")
        await wait_until(lambda: isinstance(app.screen, DraftsScreen))
        screen = app.screen
        assert isinstance(screen, DraftsScreen)
        await wait_until(lambda: len(screen.runs) == len(screen.drafts) > 0, timeout=90)
        await pilot.pause()
        assert_inert(screen_text(app), "drafts")
        for name in DRAFTED:
            draft = f"draft-{name}"
            while screen.current is not None and screen.current.name != draft:
                await pilot.press("s")
            await pilot.pause()
            assert_inert(screen_text(app), draft)
            await pilot.press("o")
            await wait_until(lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.pause()
            question = screen_text(app)
            assert_inert(question, f"{draft} confirmation")
            if name in MARKUP:
                assert CORPUS[name] in question, (name, question)
            await pilot.press("y")
            await wait_until(lambda d=draft: d not in [x.name for x in screen.drafts], timeout=30)
            assert_inert(screen_text(app), f"{draft} approved")
    cases = load_suite(suite)
    for name in DRAFTED:
        # What was confirmed is what the suite holds: the characters, not their rendering.
        assert cases.case(f"draft-{name}").expect == {"output": CORPUS[name]}
    assert load_drafts(drafts_path(suite)).drafts == ()
    assert_inert(suite.read_text(encoding="utf-8"), "suite")
