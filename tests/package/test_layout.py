"""The tests are laid out like the source: a newcomer finds the tests of
``src/cer/judge/compare.py`` in ``tests/judge/test_compare.py``.

Every folder of ``tests/`` mirrors a package of ``src/cer`` (``tests/engine/command/``
for ``cer.engine.command``) or is one of the few folders of :data:`FOLDERS`, which test
the project rather than one package. A test file is named after a module of its package
(``test_<module>.py``, a module of the package or of one of its subpackages; the
package's own name stands for its ``__init__``), or it tests one behaviour across
modules and has its line in :data:`BEHAVIOURS`, which says what that behaviour is. A test
file at the top of ``tests/`` is named after a top-level module of ``cer``.
"""

from __future__ import annotations

from pathlib import Path

import support

TESTS = support.ROOT / "tests"
SOURCE = support.ROOT / "src" / "cer"

FOLDERS: dict[str, str] = {
    "hostile": "implementations that attack a guarantee of docs/trust.md, one file an attack",
    "docs": "what the documentation says holds: its names, its walk-throughs, its tables",
    "examples": "the bundled examples under examples/, each against its own suite",
    "package": "the package as a whole: its public names, its imports, this layout",
    "__snapshots__": "(in tests/tui/) the screens tests/tui/test_snapshots.py holds",
    "data": "files the tests read",
}
"""The folders of ``tests/`` that mirror no package, and what each holds."""

BEHAVIOURS: dict[str, str] = {
    "cli/test_ci_shards.py": "docs/ci.md's shard jobs and merge job, run locally",
    "cli/test_help.py": "--help and docs/cli.md name what the tables hold",
    "cli/test_one_cause.py": "an implementation that cannot start is said once",
    "docs/test_architecture.py": "docs/architecture.md names every module",
    "docs/test_extension_points.py": "the extension points of docs/architecture.md together",
    "docs/test_first_module.py": "docs/first-module.md followed from an empty folder",
    "docs/test_matrix.py": "docs/matrix.md's commands and figures",
    "docs/test_names.py": "every command, option and key the docs name exists",
    "docs/test_readme.py": "the README's two commands",
    "engine/test_callable_impl.py": "an implementation given as a callable object",
    "engine/test_hang_stack.py": "a timed-out case shows where it hung",
    "engine/test_max_fail.py": "--max-fail and -x stop handing out cases",
    "engine/test_parallel.py": "several workers, shards and warm workers: same truth",
    "engine/test_properties.py": "property tests of random suites and observations",
    "engine/test_run_conditions.py": "every run records what it ran under",
    "engine/test_timed_cases.py": "cases with a time bound run with nothing else in flight",
    "examples/test_calc.py": "the calc example against its suite",
    "examples/test_ini.py": "the ini example against its suite",
    "history/test_flaky_stopped.py": "a case a stopped run never reached is not flaky",
    "history/test_partial.py": "cer history marks the runs of part of a suite",
    "judge/test_any_of_unordered.py": "the _any_of and _unordered operators",
    "judge/test_fail_classes.py": "every failure carries the fail class the supervisor saw",
    "judge/test_operators.py": "the operators are one table, and a new one is one entry",
    "judge/test_operator_table.py": "docs/execution-model.md lists the operators of the table",
    "judge/test_verdict_lines.py": "a failed rejection says what happened, in one line",
    "judge/test_what_came_back.py": "a mismatch shows what the implementation returned",
    "package/test_import_hygiene.py": "the core never imports the UI; commands import little",
    "package/test_layout.py": "this layout",
    "package/test_public_names.py": "cer exports what the docs tell users to import",
    "pytest_plugin/test_baseline.py": "the plugin's known-failures baseline as strict xfails",
    "pytest_plugin/test_plugin.py": "the plugin end to end, a pytest session per test",
    "pytest_plugin/test_xdist_shares.py": "one cer run per pytest-xdist worker",
    "reports/test_input_shown.py": "the case's input beside every failure on every surface",
    "reports/test_matrix_reports.py": "the HTML and Markdown pages of a matrix",
    "reports/test_new_format.py": "the worked example of a new report format",
    "reports/test_numbers_for_people.py": "measurements shown with their unit",
    "reports/test_report_cases.py": "the HTML report lists every case for a reviewer",
    "reports/test_result_lines.py": "cer run --format jsonl, streamed and partial",
    "results/test_verdict_words.py": "the verdict word agrees with the exit code",
    "review/test_derive_sentences.py": "derive reads constraint sentences as people write them",
    "tui/test_boundary.py": "the UI's pure modules stay free of Textual",
    "tui/test_docs.py": "docs/tui.md lists every key as the app binds it",
    "tui/test_failed_first.py": "the watch loop runs what failed last time first",
    "tui/test_following.py": "every screen follows the latest results",
    "tui/test_frictions.py": "the list's filter, group-by and columns",
    "tui/test_history_coverage.py": "the run history and the Coverage pane on screen",
    "tui/test_hostile_text.py": "what an implementation sends never acts on the terminal",
    "tui/test_known_failures.py": "a known-failures baseline on screen",
    "tui/test_panes.py": "the detail panes are one table",
    "tui/test_reactive_and_errors.py": "reactive bars, and every worker's error shown",
    "tui/test_real_runner.py": "the app with the real runner on the calc example",
    "tui/test_run_selection.py": "runs of part of the suite say which part",
    "tui/test_several.py": "several implementations at once",
    "tui/test_snapshots.py": "snapshots of the screen",
    "tui/test_streaming.py": "a streaming run costs what the rows on screen cost",
    "tui/test_triage_keys.py": "run just this, where it failed, terminal manners",
    "tui/test_watch_edits.py": "an edit of a large suite reruns what it changed",
    "worker/test_worker_state.py": "the worker's cheap state check sees every change",
}
"""Test files that test one behaviour across modules, each with what it tests."""


def modules_of(package: Path) -> set[str]:
    """The names a test file in the package's folder may take after ``test_``."""
    names = {package.name}
    for path in package.rglob("*.py"):
        names.add(path.stem.strip("_"))
    names.update(path.name for path in package.rglob("*") if path.is_dir())
    return names


def test_every_folder_mirrors_a_package_or_is_listed() -> None:
    strays = []
    for folder in sorted(TESTS.rglob("*")):
        if not folder.is_dir() or "__pycache__" in folder.parts:
            continue
        relative = folder.relative_to(TESTS)
        if relative.parts[0] in FOLDERS or "__snapshots__" in relative.parts:
            continue
        if not (SOURCE / relative / "__init__.py").is_file():
            strays.append(str(relative))
    assert strays == [], f"folders that mirror no package of src/cer: {strays}"


def test_every_test_file_is_named_after_a_module_or_a_behaviour() -> None:
    strays = []
    for path in sorted(TESTS.rglob("test_*.py")):
        relative = path.relative_to(TESTS)
        folder = relative.parent
        if folder.parts and folder.parts[0] in {"hostile", "data"}:
            continue
        if relative.as_posix() in BEHAVIOURS:
            continue
        name = path.stem.removeprefix("test_")
        listed_folder = bool(folder.parts) and folder.parts[0] in FOLDERS
        top_level_package = not folder.parts and name == "cer"
        if listed_folder or top_level_package or name not in modules_of(SOURCE / folder):
            strays.append(relative.as_posix())
    assert strays == [], f"test files named after no module, and not in BEHAVIOURS: {strays}"


def test_every_listed_behaviour_is_a_test_file() -> None:
    gone = [name for name in BEHAVIOURS if not (TESTS / name).is_file()]
    assert gone == [], f"BEHAVIOURS names files that are gone: {gone}"


def test_a_behaviour_file_is_not_also_named_after_a_module() -> None:
    """A file listed as a behaviour whose name is a module's would hide a misplaced
    test of that module behind the table."""
    named = [
        name
        for name in BEHAVIOURS
        if Path(name).parts[0] not in FOLDERS
        and Path(name).stem.removeprefix("test_") in modules_of(SOURCE / Path(name).parent)
    ]
    assert named == [], f"named after a module of their package: {named}"


def test_every_test_package_has_an_init() -> None:
    """Two test files may share a name in two folders (``cli/test_history.py`` and
    ``history/``'s) only when each folder is a package of its own."""
    missing = [
        str(folder.relative_to(TESTS))
        for folder in TESTS.rglob("*")
        if folder.is_dir()
        and any(folder.glob("test_*.py"))
        and folder.name != "hostile"
        and not (folder / "__init__.py").is_file()
    ]
    assert missing == [], f"test folders without __init__.py: {missing}"
