"""Every key of the key table names its target, and that target binds it and has its
action: a key moved to the wrong place, or an action renamed on one side only, fails
here rather than doing nothing when pressed."""

from __future__ import annotations

import pytest
from textual.binding import Binding
from textual.dom import DOMNode

from cer.tui.app import CerApp
from cer.tui.keys import (
    APP_KEYS,
    LIST_KEYS,
    MATRIX_KEYS,
    Key,
    Target,
    app_keys,
    global_keys,
    screen_keys,
)
from cer.tui.screens.run import RunScreen
from cer.tui.widgets.case_list import CaseList

TARGETS: dict[Target, type[DOMNode]] = {"app": CerApp, "screen": RunScreen, "widget": CaseList}
EVERY_KEY = (*APP_KEYS, *MATRIX_KEYS, *LIST_KEYS)


@pytest.mark.parametrize("key", EVERY_KEY, ids=lambda key: f"{key.target}:{key.keys}")
def test_every_keys_action_exists_on_the_target_it_names(key: Key) -> None:
    target = TARGETS[key.target]
    action = getattr(target, f"action_{key.action}", None)
    assert callable(action), f"{key.keys}: {target.__name__} has no action_{key.action}"


def _bound(target: type[DOMNode]) -> list[tuple[str, str]]:
    own = target.__dict__["BINDINGS"]
    return [(b.key, b.action) for b in own if isinstance(b, Binding)]


def test_each_target_binds_exactly_the_keys_that_name_it() -> None:
    assert _bound(CerApp) == [(k.keys, k.action) for k in global_keys()]
    assert _bound(RunScreen) == [(k.keys, k.action) for k in screen_keys(several=True)]
    assert _bound(CaseList) == [(k.keys, k.action) for k in LIST_KEYS]
    every = {(k.keys, k.action) for k in EVERY_KEY}
    bound = {pair for target in TARGETS.values() for pair in _bound(target)}
    assert bound == every


def test_the_footer_order_puts_the_apps_keys_after_the_screens() -> None:
    # The footer lists the screen's bindings before the app's, so the table keeps the
    # app's keys last: its order is the footer's.
    order = [key.target for key in app_keys(several=True)]
    assert order == sorted(order, key=lambda target: target == "app")
