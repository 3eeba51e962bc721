"""The implementation id: the supervisor hashes every non-standard-library file the
implementation loaded, installed packages included, and distrusts an odd list."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from cer import events
from cer.engine.identity import MAX_FILES, UNKNOWN, identify, scope_for
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


def test_a_module_that_is_a_link_in_an_import_root_is_identified_by_its_code(
    tmp_path: Path,
) -> None:
    """A module the user linked into the project from elsewhere was once left out as
    lying outside every import root: its id was the hash of nothing, the same after
    any edit."""
    real, project = tmp_path / "realsrc", tmp_path / "project"
    real.mkdir()
    project.mkdir()
    (real / "m.py").write_text("def f(x):\n    return x\n", encoding="utf-8")
    (project / "m.py").symlink_to(real / "m.py")
    scope = scope_for("m", [str(project)])
    first = identify("m:f", [str(project / "m.py")], scope)
    assert first.known and first.files, first
    (real / "m.py").write_text("def f(x):\n    return -x\n", encoding="utf-8")
    second = identify("m:f", [str(project / "m.py")], scope)
    assert second.implementation_id != first.implementation_id
    # A name that climbs out of the root through `..` is still placed by its real path.
    outside = tmp_path / "outside.py"
    outside.write_text("secret = 1\n", encoding="utf-8")
    climbing = identify("m:f", [f"{project}/../outside.py"], scope)
    assert str(outside) not in climbing.files and f"{project}/../outside.py" not in climbing.files


def test_an_implementation_of_no_file_it_can_place_gets_a_one_off_id(tmp_path: Path) -> None:
    """Code an import hook maps from a folder on no import path (an editable install's
    finder) leaves the supervisor no file to hash: two such runs are never called the
    same code."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "hooked.py").write_text("def f(x):\n    return x\n", encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    scope = scope_for("hooked", [str(project)])
    one = identify("hooked:f", [str(elsewhere / "hooked.py")], scope)
    two = identify("hooked:f", [str(elsewhere / "hooked.py")], scope)
    assert not one.known and one.implementation_id != two.implementation_id
    assert one.problem is not None and "no file its import loaded lies in a folder" in one.problem


def test_two_files_that_swap_their_contents_are_other_code(tmp_path: Path) -> None:
    """The id once hashed the files' contents without their names: with helper_a.py
    and helper_b.py swapped, the code returned the other value under the same id, and
    history called its case flaky."""
    a, b = tmp_path / "helper_a.py", tmp_path / "helper_b.py"
    scope = scope_for("impl", [str(tmp_path)])
    a.write_text("VALUE = 1\n", encoding="utf-8")
    b.write_text("VALUE = 2\n", encoding="utf-8")
    first = identify("impl:f", [str(a), str(b)], scope)
    a.write_text("VALUE = 2\n", encoding="utf-8")
    b.write_text("VALUE = 1\n", encoding="utf-8")
    assert identify("impl:f", [str(a), str(b)], scope).implementation_id != (
        first.implementation_id
    )
    # The same code elsewhere (another checkout) keeps its id.
    other = tmp_path / "other"
    other.mkdir()
    (other / "helper_a.py").write_text("VALUE = 2\n", encoding="utf-8")
    (other / "helper_b.py").write_text("VALUE = 1\n", encoding="utf-8")
    again = identify(
        "impl:f",
        [str(other / "helper_a.py"), str(other / "helper_b.py")],
        scope_for("impl", [str(other)]),
    )
    assert again.implementation_id == identify("impl:f", [str(a), str(b)], scope).implementation_id
