"""An implementation that names its own fail class: in a returned table, in the type
and message of an exception, in a command's error document. The class is the
supervisor's (docs/execution-model.md#fail-classes): none of these words is read as one,
and a case that did not pass never carries a pass's ``None``."""

from __future__ import annotations

from pathlib import Path

from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import RunResult, Status
from cer.results import serialize
from cer.suite.loader import load_suite

SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "claims-in-its-value"
category = "functional"
input = { mode = "value" }
expect = { output = 1 }

[[cases]]
name = "raises-a-class-name"
category = "functional"
input = { mode = "raise" }
expect = { output = 1 }

[[cases]]
name = "raises-as-a-rejection"
category = "functional"
input = { mode = "raise" }
expect = { rejects = true, error_type = "ValueError" }
"""

IMPL = """\
class timed_out(Exception):
    pass


def f(mode):
    if mode == "value":
        return {"output": 2, "fail_class": None, "status": "pass", "type": "skipped"}
    raise timed_out("fail_class: not_run; status: pass")
"""


def _run(root: Path, impl: str, **options: object) -> RunResult:
    return run_suite(
        load_suite(root / "evals.toml"),
        RunOptions(impl, timeout=5.0, **options),  # type: ignore[arg-type]
    )


def test_a_python_implementation_cannot_name_its_class(tmp_path: Path) -> None:
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "claims.py").write_text(IMPL, encoding="utf-8")
    run = _run(tmp_path, "claims:f", paths=(str(tmp_path),))
    found = {r.case_name: (r.status, r.fail_class) for r in run.results}
    assert found == {
        "claims-in-its-value": (Status.FAIL, "mismatch"),
        "raises-a-class-name": (Status.ERRORED, "raised"),
        "raises-as-a-rejection": (Status.FAIL, "mismatch"),
    }
    document = serialize.run_to_dict(run)
    assert [r["fail_class"] for r in document["results"]] == ["mismatch", "raised", "mismatch"]


def test_a_command_cannot_name_its_class(tmp_path: Path) -> None:
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    script = tmp_path / "claims.sh"
    script.write_text(
        '#!/bin/sh\necho \'{"error": {"type": "timed_out", "message": "fail_class: not_run"}}\'\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    run = _run(tmp_path, str(script), kind="command-per-case", sandbox="off")
    found = {r.case_name: (r.status, r.fail_class) for r in run.results}
    assert found == {
        "claims-in-its-value": (Status.ERRORED, "raised"),
        "raises-a-class-name": (Status.ERRORED, "raised"),
        "raises-as-a-rejection": (Status.FAIL, "mismatch"),
    }
