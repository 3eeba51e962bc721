"""An implementation installed in editable mode (setuptools' default: an import hook in
``site-packages`` maps the package from the project's folder) is imported under the
sandbox and identified by its code (cer.engine.editable)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import cer
from cer import sandbox
from cer.engine.editable import mapped_folders
from support import single_case_suite

FINDER = """
import importlib.util
import sys

MAPPING: dict[str, str] = {"edpkg": PACKAGE}


class _Finder:  # as setuptools' finder: the package's __init__.py, by its path
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname in MAPPING:
            folder = MAPPING[fullname]
            return importlib.util.spec_from_file_location(
                fullname, folder + "/__init__.py", submodule_search_locations=[folder]
            )
        return None


def install():
    sys.meta_path.append(_Finder)
"""

OPTIONS = ("--sandbox", "require", "--no-history", "-v")


def _site(tmp_path: Path) -> tuple[Path, Path]:
    """A virtual environment whose site-packages maps ``edpkg`` from a folder on no
    import path, as ``pip install -e`` does; returns its python and the package."""
    package = tmp_path / "project" / "edpkg"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text(
        "from importlib.resources import files\n\ndef f(x):\n"
        "    return files('edpkg').joinpath('data/answer.txt').read_text().strip()\n",
        encoding="utf-8",
    )
    (package / "data" / "answer.txt").write_text("ok\n", encoding="utf-8")
    (tmp_path / "project" / "NOTES.md").write_text("not lent\n", encoding="utf-8")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "__editable___edpkg_0_1_finder.py").write_text(
        FINDER.replace("PACKAGE", repr(str(package))), encoding="utf-8"
    )
    (site / "__editable__.edpkg-0.1.pth").write_text(
        "import __editable___edpkg_0_1_finder; __editable___edpkg_0_1_finder.install()\n",
        encoding="utf-8",
    )
    ours = [sysconfig.get_paths()["purelib"], str(Path(cer.__file__).resolve().parents[1])]
    (site / "cer-tests.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")
    return venv / "bin" / "python", package


def test_the_folders_an_editable_finder_maps_are_read_without_importing_it(
    tmp_path: Path,
) -> None:
    _, package = _site(tmp_path)
    (site,) = (tmp_path / "venv").glob("lib/python*/site-packages")
    assert mapped_folders([str(site)]) == [str(package)]
    (site / "__editable___broken_finder.py").write_text("MAPPING = {", encoding="utf-8")
    (site / "__editable___odd_finder.py").write_text("MAPPING = f()\n", encoding="utf-8")
    assert mapped_folders([str(site), "/nonexistent"]) == [str(package)]


@pytest.mark.skipif(not sandbox.status().available, reason="no Landlock here")
def test_an_editable_install_runs_under_the_sandbox_and_is_identified_by_its_code(
    tmp_path: Path,
) -> None:
    """Its package was refused under the sandbox (PermissionError on its __init__.py),
    and its id was the hash of no file, the same after every edit."""
    python, package = _site(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "evals.toml").write_text(
        single_case_suite('{ output = "ok" }', "{ x = 1 }"), encoding="utf-8"
    )

    def run() -> str:
        done = subprocess.run(
            [str(python), "-m", "cer.cli", "run", "evals.toml", "--impl", "edpkg:f", *OPTIONS],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=120,
            env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
        )
        assert done.returncode == 0, (done.stdout, done.stderr)
        (line,) = [line for line in done.stdout.splitlines() if "edpkg:f@" in line]
        return line.split("edpkg:f@", 1)[1].split()[0]

    first = run()
    assert not first.startswith(("unknown-", "unverified-")), first
    (package / "__init__.py").write_text(
        (package / "__init__.py").read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8"
    )
    assert run() != first
