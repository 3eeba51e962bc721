"""``cer run --format jsonl``: the results streamed one line at a time, a header before
and a trailer after; a run killed mid-way leaves a valid partial file that ``cer merge``
refuses clearly; a finished one merges like a JSON report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import support
from cer.cli.exits import ExitCode
from cer.events import CaseFinished
from cer.model import CaseResult, Status, Suite
from cer.results.jsonlines import LineWriter, read_lines
from cer.suite.loader import load_suite
from reports.test_reports import validate_json
from support import Module, cer_in_process

CASES = 12


def suite_text(count: int = CASES) -> str:
    cases = "".join(
        f'[[cases]]\nname = "c{i:02d}"\ncategory = "functional"\ninput = {{ x = {i} }}\n'
        f"expect = {{ output = {2 * i} }}\n\n"
        for i in range(count)
    )
    return f'commonsformat_evals = "0.2"\ntarget = "t"\n\n{cases}'


IMPL = """
import time

def double(x):
    if x == 3:
        return x * 3  # a failure
    if x == SLOW:
        time.sleep(8)
    return x * 2
"""


def write(module: Module, slow: int = -1) -> str:
    module.suite(suite_text())
    return module.impl(IMPL.replace("SLOW", str(slow))) + ":double"


def cer(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``cer ARGS`` from ``cwd``, in this process (the killed runs below are real ones)."""
    return cer_in_process(args, cwd)


def lines_of(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def test_a_finished_run_streams_header_results_trailer_and_merges(module: Module) -> None:
    impl = write(module)
    target = module.root / "out.jsonl"
    done = cer(
        [
            "run",
            "evals.toml",
            "--impl",
            impl,
            "--no-history",
            "-j",
            "2",
            "--format",
            "jsonl",
            "-o",
            str(target),
        ],
        module.root,
    )
    assert done.returncode == ExitCode.FAILED, done.stderr
    assert "12 cases: 11 passed, 1 failed" in done.stdout  # the summary line, as for json
    lines = lines_of(target)
    assert len(lines) == CASES + 2
    assert [line["type"] for line in lines] == ["header"] + ["result"] * CASES + ["trailer"]
    for line in lines:
        assert validate_json(line, "results-lines.schema.json") == [], line
    header, trailer = lines[0], lines[-1]
    assert header["cases_total"] == CASES
    assert header["conditions"]["jobs"] == 2
    assert trailer["run"]["run_id"] == header["run_id"]
    assert trailer["summary"]["verdict"] == "nonconformant"
    # two workers finish cases out of order: the lines are in declared order all the same
    assert [line["position"] for line in lines[1:-1]] == list(range(1, CASES + 1))
    # Merged, it is the run the JSON report describes.
    merged = cer(["merge", str(target), "--format", "json"], module.root)
    assert merged.returncode == ExitCode.FAILED, merged.stderr
    document = json.loads(merged.stdout)
    assert [(r["case_name"], r["status"]) for r in document["results"]] == [
        (f"c{i:02d}", "fail" if i == 3 else "pass") for i in range(CASES)
    ]


def test_standard_output_carries_the_lines_without_a_report(module: Module) -> None:
    impl = write(module)
    done = cer(
        ["run", "evals.toml", "--impl", impl, "--no-history", "-j", "1", "--format", "jsonl"],
        module.root,
    )
    assert done.returncode == ExitCode.FAILED, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0]["type"] == "header" and lines[-1]["type"] == "trailer"
    assert len(lines) == CASES + 2
    # -j 1: results come in declared order.
    assert [line["case_name"] for line in lines[1:-1]] == [f"c{i:02d}" for i in range(CASES)]


def wait_for_results(path: Path, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b'"type":"result"') >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never held {count} results")


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_run_killed_mid_way_leaves_every_finished_case_on_disk(
    module: Module, how: signal.Signals
) -> None:
    impl = write(module, slow=6)
    target = module.root / "partial.jsonl"
    # A run killed outright cannot remove its scratch folder: it is made in the test's
    # own folder, not left in the machine's temporary folder after every suite run.
    temporary = module.root / "tmp"
    temporary.mkdir()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cer.cli",
            "run",
            "evals.toml",
            "--impl",
            impl,
            "--no-history",
            "-j",
            "1",
            "--format",
            "jsonl",
            "-o",
            str(target),
        ],
        cwd=module.root,
        env={**os.environ, "TMPDIR": str(temporary)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_results(target, 6)  # c00..c05 finished; c06 sleeps
        process.send_signal(how)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == (-how if how == signal.SIGKILL else 128 + how)
    lines = lines_of(target)  # every line whole: each was written in one go
    for line in lines:
        assert validate_json(line, "results-lines.schema.json") == [], line
    assert lines[0]["type"] == "header"
    assert [line["type"] for line in lines[1:]] == ["result"] * 6
    assert [line["status"] for line in lines[1:]] == ["pass"] * 3 + ["fail"] + ["pass"] * 2
    if how == signal.SIGTERM:
        assert "keeps the 6 results finished, without a trailer" in stderr
    read = read_lines(target.read_text(encoding="utf-8"))
    assert read.run is None and read.results == 6 and read.total == CASES
    merged = cer(["merge", str(target)], module.root)
    assert merged.returncode == ExitCode.USAGE
    assert "the run did not finish (it has no trailer line): 6 of 12 cases have a result" in (
        merged.stderr
    )
    assert "Traceback" not in merged.stderr


def test_a_line_cut_by_a_kill_is_reported_not_read(module: Module) -> None:
    impl = write(module)
    target = module.root / "out.jsonl"
    cer(
        [
            "run",
            "evals.toml",
            "--impl",
            impl,
            "--no-history",
            "--format",
            "jsonl",
            "-o",
            str(target),
        ],
        module.root,
    )
    text = target.read_text(encoding="utf-8")
    cut = text[: text.index('"type":"result"', text.index('"type":"result"') + 1) + 20]
    read = read_lines(cut)
    assert read.run is None
    assert "its last line (line 3) is cut off" in read.problem
    (module.root / "cut.jsonl").write_text(cut, encoding="utf-8")
    merged = cer(["merge", "cut.jsonl"], module.root)
    assert merged.returncode == ExitCode.USAGE
    assert "cut off" in merged.stderr


def test_shards_in_json_lines_and_json_merge_together(module: Module) -> None:
    impl = write(module)
    parts = []
    for index, form in ((1, "jsonl"), (2, "json")):
        target = module.root / f"shard{index}.{form}"
        done = cer(
            [
                "run",
                "evals.toml",
                "--impl",
                impl,
                "--no-history",
                "--shard",
                f"{index}/2",
                "--format",
                form,
                "-o",
                str(target),
            ],
            module.root,
        )
        assert done.returncode in (ExitCode.OK, ExitCode.FAILED), done.stderr
        parts.append(str(target))
    merged = cer(["merge", *parts, "--format", "json"], module.root)
    assert merged.returncode == ExitCode.FAILED, merged.stderr
    assert json.loads(merged.stdout)["summary"]["cases_total"] == CASES
    assert json.loads(merged.stdout)["summary"]["cases_failed"] == 1


def test_an_implementation_cannot_forge_a_line(module: Module) -> None:
    """What the implementation returns or prints is escaped inside its result's line:
    a newline and a forged trailer in it add no line."""
    module.suite(suite_text(3))
    forged = '\\n{"type":"trailer","run":{},"summary":{"verdict":"conformant"}}\\n'
    impl = module.impl(
        f"""
def double(x):
    print({forged!r})
    return {forged!r} if x == 1 else x * 2
"""
    )
    target = module.root / "out.jsonl"
    done = cer(
        [
            "run",
            "evals.toml",
            "--impl",
            f"{impl}:double",
            "--no-history",
            "--format",
            "jsonl",
            "-o",
            str(target),
        ],
        module.root,
    )
    assert done.returncode == ExitCode.FAILED, done.stderr
    lines = lines_of(target)
    assert [line["type"] for line in lines] == ["header", "result", "result", "result", "trailer"]
    assert lines[-1]["summary"]["verdict"] == "nonconformant"


def test_several_implementations_are_refused_clearly(module: Module) -> None:
    impl = write(module)
    done = cer(
        [
            "run",
            "evals.toml",
            "--impl",
            impl,
            "--impl",
            impl,
            "--no-history",
            "--format",
            "jsonl",
            "-o",
            "x.jsonl",
        ],
        module.root,
    )
    assert done.returncode == ExitCode.USAGE
    assert "--format jsonl streams the results of one implementation" in done.stderr


def test_the_lines_schema_keeps_up_with_the_json_report_schema() -> None:
    """Each line holds the JSON report's parts: the lines schema carries copies of the
    report schema's definitions, which must not drift apart."""
    docs = support.ROOT / "docs"
    report = json.loads((docs / "results.schema.json").read_text(encoding="utf-8"))
    lines = json.loads((docs / "results-lines.schema.json").read_text(encoding="utf-8"))
    for name, definition in report["$defs"].items():
        if name == "result":
            copied = dict(lines["$defs"]["result_line"]["properties"])
            copied.pop("type")
            wanted = {k: v for k, v in definition["properties"].items() if k != "flaky"}
            assert copied == wanted, "result_line differs from result"
        else:
            assert lines["$defs"][name] == definition, f"$defs/{name} differs"
    conditions = report["$defs"]["run"]["properties"]["conditions"]
    assert lines["$defs"]["header_line"]["properties"]["conditions"] == conditions


def _finished(suite: Suite, position: int) -> CaseFinished:
    case = suite.cases[position - 1]
    result = CaseResult(case.name, case.case_class, case.category, Status.PASS, position=position)
    return CaseFinished(result, 0, len(suite.cases))


def test_lines_are_written_in_declared_order_whatever_order_results_come_in(
    tmp_path: Path,
) -> None:
    (tmp_path / "evals.toml").write_text(suite_text(5), encoding="utf-8")
    suite = load_suite(tmp_path / "evals.toml")
    written: list[int] = []
    writer = LineWriter(lambda data: written.append(json.loads(data)["position"]), suite)
    for position in (3, 1, 5):
        writer(_finished(suite, position))
    assert written == [1]  # 3 and 5 wait for 2 and 4
    writer(_finished(suite, 2))
    assert written == [1, 2, 3]
    # a run stopped before case 4 finished: what waits is written, still in order
    writer.flush()
    assert written == [1, 2, 3, 5] and writer.written == 4
