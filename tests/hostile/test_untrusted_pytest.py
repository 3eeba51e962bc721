"""What the implementation says is only data in the pytest plugin too: an implementation
whose import fails with a hostile message (the load failure every case reports, and the
note of the session's summary), and one that returns, raises and prints every class of
:mod:`hostile_text`. pytest runs in a subprocess, as a user runs it; nothing it prints
may hold a raw control or bidi character, and nothing may crash."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_text import CORPUS, assert_inert, implementation, suite_lines

from support import NO_TEST_PLUGINS

pytestmark = pytest.mark.slow

SHOWN = {k: v for k, v in CORPUS.items() if k != "long-line"}

IMPL = implementation(SHOWN)

BROKEN = f"""
raise ImportError({"".join(SHOWN.values())!a})
"""


def _suite(folder: Path) -> Path:
    lines = suite_lines(SHOWN)
    path = folder / "evals.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    (folder / "hostile_pytest_impl.py").write_text(IMPL, encoding="ascii")
    (folder / "broken_pytest_impl.py").write_text(BROKEN, encoding="ascii")
    return path


def _pytest(folder: Path, impl: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["NO_COLOR"] = "1"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *NO_TEST_PLUGINS,
            "-p",
            "no:cacheprovider",
            "-rA",
            "evals.toml",
            "--cer-impl",
            impl,
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        timeout=300,
    )


@pytest.mark.parametrize("impl", ["broken_pytest_impl:f", "hostile_pytest_impl:f"])
def test_the_plugin_shows_what_the_implementation_said_as_data(tmp_path: Path, impl: str) -> None:
    _suite(tmp_path)
    done = _pytest(tmp_path, impl)
    out = done.stdout.decode("utf-8")
    err = done.stderr.decode("utf-8")
    assert done.returncode == 1, out + err
    assert "Traceback" not in err, err
    assert_inert(out, "pytest stdout")
    assert_inert(err, "pytest stderr")
    if impl.startswith("broken"):
        assert "could not be loaded" in out
        assert "note: the Python implementation broken_pytest_impl:f could not be loaded" in out
    else:
        assert f"{len(SHOWN)} failed, {len(SHOWN)} errors" in out
        assert "[/nope]" in out
