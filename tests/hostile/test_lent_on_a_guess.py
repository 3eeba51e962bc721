"""What the sandbox lends on a guess never lends a checkout's metadata.

To let toolchains start, the sandbox lends folders it finds rather than ones the user
named: the ``node_modules`` above a command's script, the installation a link on
``PATH`` leads into, a virtual environment whose interpreter a command runs, the
packages an editable install maps. Each once lent a checkout's ``.git``, where the
committed suite sits, and the implementation returned an expected value it read
there: a pass it did not earn. Each test plants the route and asserts the read is
refused.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cer import sandbox
from cer.engine import editable
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import RunResult, Status
from cer.sandbox import shims
from cer.suite.loader import load_suite

pytestmark = pytest.mark.skipif(not sandbox.status().available, reason="no Landlock here")

SECRET = "SECRET-EXPECTED-4242"

READER = """
import json, os, sys
path = os.environ["CER_TEST_SECRET"]
try:
    with open(path) as handle:
        found = handle.read().strip()
except OSError:
    found = "refused"
json.loads(sys.stdin.read())
sys.stdout.write(json.dumps({"observation": {"type": "string", "value": found}}))
"""

SUITE = f"""\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "reads-the-checkout"
category = "functional"
input = {{}}
expect = {{ output = "{SECRET}" }}
"""


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout whose metadata holds the expected value; the suite in ``spec/``, the
    working directory ``impl/``."""
    root = tmp_path / "proj"
    (root / ".git" / "objects").mkdir(parents=True)
    secret = root / ".git" / "objects" / "blob"
    secret.write_text(SECRET, encoding="utf-8")
    (root / "spec").mkdir()
    (root / "spec" / "evals.toml").write_text(SUITE, encoding="utf-8")
    (root / "impl").mkdir()
    monkeypatch.chdir(root / "impl")
    monkeypatch.setenv("CER_TEST_SECRET", str(secret))
    return root


def _run_python(root: Path, impl: str) -> RunResult:
    """The checkout's suite run on the Python implementation ``impl``, sandboxed."""
    return run_suite(
        load_suite(root / "spec" / "evals.toml"),
        RunOptions(impl=impl, timeout=10.0, sandbox="require"),
    )


def _run(root: Path, script: Path) -> tuple[Status, str]:
    result = run_suite(
        load_suite(root / "spec" / "evals.toml"),
        RunOptions(
            impl=f"{sys.executable} {script}",
            kind="command-per-case",
            timeout=10.0,
            sandbox="require",
        ),
    )
    (case,) = result.results
    return case.status, str((case.observation or {}).get("output", case.reason))


def test_a_node_modules_link_beside_a_script_lends_nothing(checkout: Path) -> None:
    script = checkout / "impl" / "reader.py"
    script.write_text(READER, encoding="utf-8")
    (checkout / "impl" / "node_modules").symlink_to("/")  # the implementation's own doing
    assert shims.node_module_folders(str(checkout / "impl")) == []
    assert _run(checkout, script) == (Status.FAIL, "refused")


def test_a_harness_at_a_checkouts_root_is_not_lent_its_metadata(checkout: Path) -> None:
    script = checkout / "reader.py"  # beside .git
    script.write_text(READER, encoding="utf-8")
    assert _run(checkout, script) == (Status.FAIL, "refused")


def test_a_link_on_path_into_a_checkout_lends_nothing(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = checkout / "impl" / "tools" / ".bin"
    tools.mkdir(parents=True)
    (tools / "helper").symlink_to(checkout / ".git" / "objects")
    (checkout / "bin").mkdir()
    program = checkout / "bin" / "tool"
    program.write_text("#!/bin/sh\n", encoding="utf-8")
    program.chmod(0o755)
    (tools / "tool").symlink_to(program)  # an installation at the checkout's root
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    assert shims.linked_installations([str(tools)]) == []
    script = checkout / "impl" / "reader.py"
    script.write_text(READER, encoding="utf-8")
    assert _run(checkout, script) == (Status.FAIL, "refused")


def test_a_virtual_environment_at_a_checkouts_root_is_not_lent(checkout: Path) -> None:
    (checkout / "pyvenv.cfg").write_text(f"home = {os.path.dirname(sys.executable)}\n")
    (checkout / "bin").mkdir()
    (checkout / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    assert str(checkout) not in shims.chain_reads(str(checkout / "bin" / "python"))


def test_an_editable_mapping_lends_no_wide_folder_and_only_from_a_site_folder(
    checkout: Path, tmp_path: Path
) -> None:
    finders = tmp_path / "finders"
    finders.mkdir()
    wide = {"root": "'/'", "home": repr(os.path.expanduser("~")), "checkout": repr(str(checkout))}
    for name, folder in wide.items():
        (finders / f"__editable___{name}_0_finder.py").write_text(
            f"MAPPING = {{'pkg': {folder}}}\n", encoding="utf-8"
        )
    (finders / "__editable___fifo_0_finder.py").unlink(missing_ok=True)
    os.mkfifo(finders / "__editable___fifo_0_finder.py")  # must not hold the supervisor
    (finders / "__editable___deep_0_finder.py").write_text(
        "x = " + "a." * 200_000 + "a\n", encoding="utf-8"
    )
    assert editable.mapped_folders([str(finders)]) == [str(checkout)]  # not / nor home
    assert str(finders) not in editable.site_folders()  # a finder here installs nothing
    assert sandbox.in_checkout(str(checkout))  # so the sandbox does not lend it either


def test_a_module_linked_into_the_project_is_still_lent(checkout: Path, tmp_path: Path) -> None:
    """What a link out of a folder lent entry by entry may still lend: a module file
    kept elsewhere (its link in the working directory), and a package folder."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "linkedpkg").mkdir(parents=True)
    (elsewhere / "linkedpkg" / "__init__.py").write_text("VALUE = 'linked'\n")
    (elsewhere / "m.py").write_text(
        "import linkedpkg\n\ndef f():\n    return linkedpkg.VALUE\n", encoding="utf-8"
    )
    (checkout / "impl" / "m.py").symlink_to(elsewhere / "m.py")
    (checkout / "impl" / "linkedpkg").symlink_to(elsewhere / "linkedpkg")
    (checkout / "spec" / "evals.toml").write_text(SUITE.replace(SECRET, "linked"), encoding="utf-8")
    result = _run_python(checkout, "m:f")
    assert [(r.status, r.reason) for r in result.results] == [(Status.PASS, None)]


def test_a_link_lends_only_what_an_import_loads(checkout: Path, tmp_path: Path) -> None:
    """A link in the working directory lent its target whatever it was: one named
    ``n.py`` to a token file in the home folder read the token, one to a folder of the
    home folder listed it, one to another suite's answers read them. Only a module file
    and a package folder are lent through a link now."""
    home = tmp_path / "home"
    (home / ".m2").mkdir(parents=True)
    (home / ".m2" / "settings.xml").write_text(SECRET, encoding="utf-8")
    (home / ".npmrc").write_text(SECRET, encoding="utf-8")
    (home / "answers.toml").write_text(SECRET, encoding="utf-8")
    impl = checkout / "impl"
    (impl / "n.py").symlink_to(home / ".npmrc")
    (impl / "m2").symlink_to(home / ".m2")
    (impl / "answers.py").symlink_to(home / "answers.toml")
    (impl / "m.py").write_text(
        "import os\n\n"
        "def f():\n"
        "    here = os.path.dirname(os.path.abspath(__file__))\n"
        "    for name in ('n.py', 'answers.py', 'm2/settings.xml'):\n"
        "        try:\n"
        "            with open(os.path.join(here, name)) as handle:\n"
        "                return handle.read().strip()\n"
        "        except OSError:\n"
        "            pass\n"
        "    return 'refused'\n",
        encoding="utf-8",
    )
    result = _run_python(checkout, "m:f")
    assert [(r.observation or {}).get("output") for r in result.results] == ["refused"]
    assert [r.status for r in result.results] == [Status.FAIL]


def test_a_checkout_one_level_below_the_working_directory_keeps_its_metadata(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the folder above a project, the project is lent as a namespace package (a
    folder named like one): its .git with it, once."""
    monkeypatch.chdir(checkout.parent)
    (checkout.parent / "reader.py").write_text(
        "import os\n\ndef f():\n    try:\n"
        "        with open(os.environ['CER_TEST_SECRET']) as handle:\n"
        "            return handle.read().strip()\n"
        "    except OSError:\n        return 'refused'\n",
        encoding="utf-8",
    )
    result = _run_python(checkout, "reader:f")
    (case,) = result.results
    assert (case.status, (case.observation or {}).get("output")) == (Status.FAIL, "refused")
