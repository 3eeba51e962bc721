"""Which paths are watched and which changes rerun the suite."""

from __future__ import annotations

from pathlib import Path

from cer.tui.state.watching import WatchPlan, is_ignored


def test_noise_is_ignored() -> None:
    for path in (
        "/p/__pycache__/m.cpython-311.pyc",
        "/p/.git/index",
        "/p/.cer/runs.db",
        "/p/.m.py.swp",
        "/p/m.py~",
        "/p/4913",
        "/p/.#m.py",
        "/p/#m.py#",
    ):
        assert is_ignored(path), path
    assert not is_ignored("/p/m.py")


def test_plan_watches_suite_fixtures_sources_and_extras(tmp_path: Path) -> None:
    suite = tmp_path / "module" / "evals.toml"
    (suite.parent / "fixtures" / "nested").mkdir(parents=True)
    suite.write_text("")
    package = tmp_path / "src" / "pkg"
    package.mkdir(parents=True)
    source = package / "core.py"
    source.write_text("")
    extra = tmp_path / "data"
    (extra / "deeper").mkdir(parents=True)
    plan = WatchPlan.build(suite, [str(source)], [extra])
    folders = set(plan.directories)
    assert suite.parent.resolve() in folders
    assert (suite.parent / "fixtures" / "nested").resolve() in folders
    assert package.resolve() in folders
    assert (extra / "deeper").resolve() in folders
    assert plan.path_count == 4

    assert plan.is_relevant(suite.resolve())
    assert plan.is_relevant(source.resolve())
    assert plan.is_relevant((package / "new_module.py").resolve())
    assert plan.is_relevant((suite.parent / "fixtures" / "nested" / "a.md").resolve())
    assert plan.is_relevant((extra / "deeper" / "x.json").resolve())
    assert not plan.is_relevant((suite.parent / "notes.txt").resolve())
    # The module's constraints feed the Coverage pane.
    assert plan.is_relevant((suite.parent / "commonsformat.md").resolve())
    assert not plan.is_relevant((package / "commonsformat.md").resolve())
    assert not plan.is_relevant((package / "README.md").resolve())
    assert not plan.is_relevant((package / "__pycache__" / "core.cpython-311.pyc").resolve())


def test_before_any_import_python_files_on_the_import_path_count(tmp_path: Path) -> None:
    suite = tmp_path / "evals.toml"
    suite.write_text("")
    src = tmp_path / "src"
    src.mkdir()
    plan = WatchPlan.build(suite, [], [], [tmp_path, src])
    assert src.resolve() in plan.directories
    assert plan.is_relevant((src / "impl.py").resolve())
    assert not plan.is_relevant((src / "notes.md").resolve())
    known = WatchPlan.build(suite, [str(src / "impl.py")], [], [tmp_path, src])
    assert known.import_dirs == ()
    assert not known.is_relevant((tmp_path / "other.py").resolve())
