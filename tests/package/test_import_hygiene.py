"""The core never imports the terminal UI: the headless path stays small and UI-free, and
a ``cer run`` imports only what a run uses."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import cer
from support import Module, single_case_suite

FAMILIES = ("cli", "history", "judge", "pytest_plugin", "results", "review", "sandbox", "suite")
"""The packages of cer's families, whose modules are each checked as a top-level one is."""
CORE_MODULES = sorted(
    f"cer.{info.name}" for info in pkgutil.iter_modules(cer.__path__) if info.name != "tui"
) + sorted(
    f"cer.{family}.{info.name}"
    for family in FAMILIES
    for info in pkgutil.iter_modules([f"{cer.__path__[0]}/{family}"])
    if info.name != "__main__"
)


UI_FREE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
    if any(m.split(".")[0] in ("textual", "rich") for m in sys.modules):
        print(json.dumps(name))
        break
else:
    print(json.dumps(None))
"""
"""Imports the core modules one after another in one interpreter and names the first
after which Textual or Rich is loaded: one process instead of one for each of the
seventy-odd modules, and the module named is the one that brought the UI in."""


def test_no_core_module_imports_textual() -> None:
    done = subprocess.run(
        [sys.executable, "-c", UI_FREE, *CORE_MODULES], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) is None, f"{json.loads(done.stdout)} imports textual or rich"
    assert len(CORE_MODULES) > 60  # every family's modules, not an empty list


def test_the_ui_check_names_the_module_that_brings_textual_in() -> None:
    """The check can fail: a module that imports Textual is named, also after others."""
    done = subprocess.run(
        [sys.executable, "-c", UI_FREE, "cer.model", "cer.tui.app", "cer.judge.verdict"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == "cer.tui.app"


def test_worker_imports_only_what_it_needs() -> None:
    code = (
        "import sys, cer.worker.main; print(sorted(m for m in sys.modules if m.startswith('cer')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(
        sorted(
            [
                "cer",
                "cer.worker",
                "cer.worker.main",
                "cer.worker.call",
                "cer.worker.isolation",
                "cer.worker.snapshot",
                "cer.worker.target",
                "cer.worker.versions",
                "cer.process_tree",
                "cer.wire",
                "cer.wire.plaindata",
                "cer.wire.framing",
                "cer.wire.caseview",
                "cer.wire.messages",
                "cer.sandbox",
                "cer.sandbox.landlock",
                "cer.sandbox.privileges",
                "cer.sandbox.seccomp",
                "cer.sandbox.scratch",
                "cer.sandbox.world",
            ]
        )
    )


def test_the_worker_leaves_tempfile_to_the_supervisor() -> None:
    """Every worker start imports what cer.worker.main does; tempfile (with shutil,
    random, bz2 and lzma) is only the supervisor's, to make the run's scratch folder,
    and costs a worker 5 ms of its start-up."""
    code = "import sys, cer.worker.main; print(sorted({'tempfile', 'shutil'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


ONE_CASE_RUN = """
import json, sys
out, *argv = sys.argv[1:]
sys.argv = ["cer", *argv]
from cer.cli.entry import main
code = main()
with open(out, "w", encoding="utf-8") as stream:
    json.dump({"code": code, "modules": sorted(sys.modules)}, stream)
"""

NOT_FOR_A_RUN = (
    # other front ends and optional dependencies
    "textual",
    "rich",
    "jinja2",
    "tomlkit",
    "cer.tui",
    # other subcommands
    "cer.cli.history",
    "cer.review.derive",
    "cer.review.drafts",
    "cer.review.approve",
    "cer.review.observe",
    "cer.cli.check",
    # reports nobody asked for, several implementations, command implementations
    "cer.reports.html",
    "cer.reports.junit",
    "cer.reports.manifest",
    "cer.reports.tap",
    "cer.reports.github",
    "cer.reports.recorded",
    "cer.results.matrix",
    "cer.engine.command",
    # what only those need
    "xml",
    "socket",
    "zoneinfo",
    # what only some runs need: --baseline, the help's epilog, a traceback printed by
    # a forked worker, an id for code whose identity cannot be told
    "cer.results.baseline",
    "textwrap",
    "traceback",
    "secrets",
)


def run_modules(module: Module, *argv: str) -> set[str]:
    """The modules loaded by the end of a one-case ``cer run`` (started as the ``cer``
    program is) in a fresh interpreter."""
    module.suite(single_case_suite("{ output = 2 }", "{ x = 1 }"))
    impl = module.impl("def f(x):\n    return x * 2\n")
    out = module.root / "modules.json"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            ONE_CASE_RUN,
            str(out),
            "run",
            "evals.toml",
            "--impl",
            f"{impl}:f",
            "-q",
            *argv,
        ],
        cwd=module.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(out.read_text(encoding="utf-8"))
    assert found["code"] == 0
    return set(found["modules"])


def loaded(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(f"{name}.") for m in modules)


def test_a_one_case_run_imports_only_what_a_run_uses(module: Module) -> None:
    modules = run_modules(module)
    assert {"cer.engine.runner", "cer.history.database", "cer.reports.text"} <= modules
    assert [name for name in NOT_FOR_A_RUN if loaded(modules, name)] == []


def test_a_report_imports_its_writer_when_asked_for(module: Module) -> None:
    modules = run_modules(module, "--report", f"junit={module.root / 'junit.xml'}")
    assert loaded(modules, "cer.reports.junit")
    assert not loaded(modules, "cer.reports.html")


VERSION_ONLY = """
import json, sys
sys.argv = ["cer", "--version"]
from cer.cli.entry import main
code = main()
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def test_the_version_is_answered_before_the_command_line_is_imported() -> None:
    done = subprocess.run(
        [sys.executable, "-c", VERSION_ONLY], capture_output=True, text=True, check=True
    )
    version, found = done.stdout.splitlines()
    assert version == f"cer {cer.__version__}"
    result = json.loads(found)
    assert result["code"] == 0
    modules = set(result["modules"])
    assert sorted(m for m in modules if m.startswith("cer")) == ["cer", "cer.cli", "cer.cli.entry"]
    heavy = ("argparse", "sqlite3", "textual", "rich", "jinja2", "tomlkit", "dataclasses")
    assert [name for name in heavy if loaded(modules, name)] == []
