"""The core never imports the terminal UI: the headless path stays small and UI-free."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import cer

CORE_MODULES = sorted(
    f"cer.{info.name}" for info in pkgutil.iter_modules(cer.__path__) if info.name != "tui"
)


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_module_does_not_import_textual(module: str) -> None:
    code = (
        f"import sys, {module}; print(any(m.split('.')[0] in ('textual', 'rich') "
        "for m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


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
                "cer.procs",
                "cer.plaindata",
                "cer.framing",
                "cer.caseview",
                "cer.sandbox",
                "cer.landlock",
            ]
        )
    )
