"""The implementation id: the supervisor hashes every non-standard-library file the
implementation loaded, installed packages included, and distrusts an odd list."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from cer import events
from cer.engine.identity import MAX_FILES, UNKNOWN, identify
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.suite.loader import load_suite
from support import Module, single_case_suite


def test_the_id_follows_content_not_location(tmp_path: Path) -> None:
    one, two = tmp_path / "a.py", tmp_path / "b" / "a.py"
    two.parent.mkdir()
    one.write_text("x = 1\n")
    two.write_text("x = 1\n")
    first = identify("m:f", [str(one)])
    assert first.known and first.files == (str(one),)
    assert identify("m:f", [str(two)]).implementation_id == first.implementation_id
    one.write_text("x = 2\n")
    assert identify("m:f", [str(one)]).implementation_id != first.implementation_id
    assert identify("m:f", [str(one), str(one)]).files == (str(one),)


@pytest.mark.parametrize(
    "reported",
    [
        None,
        "/a.py",
        {"/a.py": 1},
        ["relative.py"],
        ["/a.py", 3],
        ["/a\x00.py"],
        ["/" + "a" * 5000],
        ["/a.py"] * (MAX_FILES + 1),
    ],
)
def test_an_odd_list_gives_an_id_no_other_run_has(reported: object) -> None:
    first, second = identify("m:f", reported), identify("m:f", reported)
    assert not first.known and first.files == ()
    assert first.implementation_id.startswith(f"m:f@{UNKNOWN}")
    assert first.implementation_id != second.implementation_id


def test_special_files_are_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    started = time.monotonic()
    found = identify("m:f", [str(fifo), "/dev/zero", str(tmp_path / "missing.py")])
    assert found.known
    assert time.monotonic() - started < 5


INSTALLED = "def double(x):\n    return x * 2\n"
USES_INSTALLED = """
import extpkg

def f(x):
    return extpkg.double(x)
"""


def _run(module: Module, impl: str, site: Path) -> tuple[str, tuple[str, ...]]:
    seen: list[tuple[str, ...]] = []

    def on_event(event: events.RunEvent) -> None:
        if isinstance(event, events.ImplementationLoaded):
            seen.append(event.source_files)

    run = run_suite(
        load_suite(module.root / "evals.toml"),
        RunOptions(impl=f"{impl}:f", paths=(str(site),), timeout=5.0),
        on_event=on_event,
    )
    assert [r.status.value for r in run.results] == ["pass"]
    return run.implementation_id, seen[0]


def test_an_installed_package_is_part_of_the_id(module: Module, tmp_path: Path) -> None:
    site = tmp_path / "venv" / "lib" / "site-packages"
    (site / "extpkg").mkdir(parents=True)
    package = site / "extpkg" / "__init__.py"
    package.write_text(INSTALLED)
    module.suite(single_case_suite("{ output = 4 }", "{ x = 2 }"))
    impl = module.impl(USES_INSTALLED)
    first, files = _run(module, impl, site)
    assert str(package.resolve()) in files
    assert str((module.root / f"{impl}.py").resolve()) in files
    assert not any(path.startswith(sys.base_prefix + "/lib/python3") for path in files)
    package.write_text(INSTALLED + "# a new release\n")
    second, _ = _run(module, impl, site)
    assert second != first
