"""The UI's pure modules stay free of Textual (the core's own boundary is checked by
tests/package/test_import_hygiene.py)."""

from __future__ import annotations

import subprocess
import sys


def test_pure_ui_modules_do_not_import_textual() -> None:
    """The state, diff and watch logic of the UI stays testable without Textual."""
    pure = [
        "cer.tui.state.board",
        "cer.tui.state.coverage_view",
        "cer.tui.state.details",
        "cer.tui.state.diffing",
        "cer.tui.state.formatting",
        "cer.tui.state.matrix_layout",
        "cer.tui.state.side_by_side",
        "cer.tui.state.themes",
        "cer.tui.state.watching",
    ]
    script = (
        "import importlib, sys\n"
        f"for name in {pure!r}:\n"
        "    importlib.import_module(name)\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] == 'textual')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"textual imported by a pure module: {done.stdout}"


def test_every_state_module_is_free_of_textual() -> None:
    """The whole ``cer.tui.state`` package, found by walking it rather than listed."""
    script = (
        "import importlib, pkgutil, sys\n"
        "import cer.tui.state as state\n"
        "names = [m.name for m in pkgutil.iter_modules(state.__path__, 'cer.tui.state.')]\n"
        "assert 'cer.tui.state.session' in names, names\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] == 'textual')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"textual imported by a state module: {done.stdout}"
