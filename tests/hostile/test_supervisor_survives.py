"""The supervisor survives anything the implementation's side sends it.

Lone surrogates, terminal control sequences and bidi controls in every field an
implementation controls (an exception's message, a returned value and its table keys,
captured output, a traceback, a harness's name), and huge observations: every output
(text report, JSON, JUnit, TAP, manifest, GitHub annotations, history) is still written,
stays valid, shows the hostile text as escapes, and the supervisor's memory does not
grow with the number of cases.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cer.model import CaseResult, Mismatch, Status
from cer.text.safetext import bound_text, bound_value, for_terminal, retained, scrub, scrub_value

HOSTILE_TEXT = "\ud800 \udcff \x1b[2J\x1b[H\x1b[32mall passed\x1b[0m \x07\r\u202e\u2066x\u2069 \x9b"
"""Lone surrogates, a screen clear, a fake green line, a bell, a carriage return, bidi
overrides and isolates, a C1 control."""

ACTIVE = ("\x1b", "\x07", "\r", "\u202e", "\u2066", "\u2069", "\x9b")
"""Characters that act on a terminal; none may reach one from the implementation."""

SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "raises"
category = "functional"
input = { x = 1 }
expect = { output = "ok" }

[[cases]]
name = "returns"
category = "functional"
input = { x = 2 }
expect = { output = "ok" }

[[cases]]
name = "table"
category = "functional"
input = { x = 3 }
expect = { output = "ok" }

[[cases]]
name = "honest"
category = "functional"
input = { x = 4 }
expect = { output = "ok" }
"""

IMPL = f"""
import os
HOSTILE = {HOSTILE_TEXT!r}

def f(x):
    os.write(1, HOSTILE.encode("utf-8", "surrogatepass"))
    os.write(2, HOSTILE.encode("utf-8", "surrogatepass"))
    if x == 1:
        raise ValueError(HOSTILE)
    if x == 2:
        return HOSTILE
    if x == 3:
        return {{"output": [HOSTILE], HOSTILE: HOSTILE}}
    return "ok"
"""


def _cer(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "cer.cli", *args],
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def _no_traceback(done: subprocess.CompletedProcess[bytes]) -> None:
    assert b"Traceback" not in done.stderr, done.stderr.decode("utf-8", "replace")


def _assert_inert(text: str) -> None:
    for char in ACTIVE:
        assert char not in text, f"{char!r} reached the output"
    for char in ("\ud800", "\udcff"):
        assert char not in text


@pytest.fixture
def hostile_module(tmp_path: Path) -> Path:
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "hostile_impl.py").write_text(IMPL, encoding="utf-8")
    return tmp_path


def test_every_output_survives_hostile_text(hostile_module: Path) -> None:
    root = hostile_module
    stale = root / "out.txt"
    done = _cer(
        "run",
        "evals.toml",
        "--impl",
        "hostile_impl:f",
        "-v",
        "-o",
        str(stale),
        "--report",
        "json=r.json",
        "--report",
        "junit=r.xml",
        "--report",
        "tap=r.tap",
        "--report",
        "manifest=m.json",
        "--report",
        "github=-",
        cwd=root,
    )
    _no_traceback(done)
    assert done.returncode == 1
    text = stale.read_text(encoding="utf-8")
    _assert_inert(text)
    assert "\\ud800" in text and "\\x1b[2J" in text and "\\u202e" in text
    assert "0 passed" not in text and "1 passed, 2 failed, 1 errored" in text
    annotations = done.stdout.decode("utf-8")
    _assert_inert(annotations)
    assert "::error file=evals.toml,line=4" in annotations
    document = json.loads((root / "r.json").read_text(encoding="utf-8"))
    statuses = [item["status"] for item in document["results"]]
    assert statuses == ["errored", "fail", "fail", "pass"]
    assert "\\ud800" in document["results"][0]["reason"]
    assert "\x1b[2J" in document["results"][0]["stdout"]  # JSON keeps the true text
    ET.parse(root / "r.xml")
    _assert_inert((root / "r.tap").read_text(encoding="utf-8"))
    json.loads((root / "m.json").read_text(encoding="utf-8"))

    as_json = _cer("run", "evals.toml", "--impl", "hostile_impl:f", "--format", "json", cwd=root)
    _no_traceback(as_json)
    assert as_json.returncode == 1
    json.loads(as_json.stdout.decode("utf-8"))

    history = _cer("history", "--case", "raises", cwd=root)
    _no_traceback(history)
    assert history.returncode == 0
    _assert_inert(history.stdout.decode("utf-8"))
    assert "errored" in history.stdout.decode("utf-8").lower() or "ERROR" in history.stdout.decode()
    listing = _cer("history", cwd=root)
    assert listing.returncode == 0
    diff = _cer("diff", cwd=root)
    _no_traceback(diff)
    _assert_inert(diff.stdout.decode("utf-8"))


HARNESS = r"""
import json, sys
NAME = "\ud800\x1b[2Jharness"
for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "start":
        reply = {"op": "started", "protocol": 1,
                 "implementation": {"name": NAME, "version": "1\u202e"}}
    elif message["op"] == "run":
        reply = {"op": "result", "seq": message["seq"],
                 "error": {"type": "E\ud800", "message": NAME, "traceback": NAME}}
    else:
        break
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
"""


def test_a_harness_naming_itself_with_surrogates_is_reported(hostile_module: Path) -> None:
    root = hostile_module
    (root / "harness.py").write_text(HARNESS, encoding="utf-8")
    done = _cer(
        "run",
        "evals.toml",
        "--impl-cmd",
        f"{sys.executable} harness.py",
        "-v",
        "--report",
        "json=r.json",
        cwd=root,
    )
    _no_traceback(done)
    assert done.returncode == 1
    _assert_inert(done.stdout.decode("utf-8"))
    document = json.loads((root / "r.json").read_text(encoding="utf-8"))
    assert {item["status"] for item in document["results"]} == {"errored"}


def test_retained_results_are_scrubbed_and_bounded_and_keep_their_status() -> None:
    huge = "x" * 5_000_000
    result = CaseResult(
        case_name="c",
        case_class="functional",
        category="functional",
        status=Status.FAIL,
        reason="bad \ud800",
        stdout="\udcff" * 3,
        traceback="T" * 2_000_000 + "ValueError: the end",
        observation={"output": huge, "\ud800": [1] * 100_000, "b": b"\x00" * 100_000},
        mismatches=(Mismatch("output", "differs", "ok", huge),),
    )
    kept = retained(result)
    assert kept.status is Status.FAIL
    assert kept.reason == "bad \\ud800"
    assert kept.stdout == "\\udcff" * 3
    assert kept.traceback is not None and kept.traceback.endswith("ValueError: the end")
    assert len(kept.traceback) < 300_000 and "[cut: " in kept.traceback
    observation = kept.observation
    assert observation is not None
    assert len(json.dumps(observation, default=str)) < 400_000
    assert observation["output"].startswith("x" * 1000) and "[cut: " in observation["output"]
    assert "\\ud800" in observation and observation["\\ud800"][-1].startswith("… [cut: ")
    assert isinstance(observation["b"], str) and "[cut: " in observation["b"]
    assert "[cut: " in kept.mismatches[0].observed
    assert kept.mismatches[0].expected == "ok"


def test_small_values_are_kept_exactly() -> None:
    value = {"output": [1, 2.5, "a", None, True, b"x", {"k": "v"}]}
    assert bound_value(value) == value
    assert scrub_value(value) is value
    assert bound_text("short") == "short"
    assert scrub("plain") == "plain"


def test_for_terminal_escapes_what_acts_on_a_terminal() -> None:
    shown = for_terminal(HOSTILE_TEXT + "\tok\nnext")
    _assert_inert(shown)
    assert "\tok\nnext" in shown
    assert "\n" not in for_terminal("a\nb", multiline=False)
    assert for_terminal("héllo · ✔") == "héllo · ✔"


# ------------------------------------------------------------------ bounded memory

BIG_SUITE_CASE = """
[[cases]]
name = "big-{n}"
category = "functional"
input = {{ n = {n} }}
expect = {{ output = "small" }}
"""

BIG_IMPL = """
def f(n):
    return "y" * (20 * 1024 * 1024) + str(n)
"""

MEASURE = """
import resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "cer.cli", *sys.argv[1:]],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def _peak_rss_kib(root: Path, cases: int) -> int:
    """The peak resident memory of the largest process of ``cer run --format json``
    (the supervisor, its worker or a case: ru_maxrss of the waited-for descendants),
    for ``cases`` cases that each return 20 MiB. Only the supervisor keeps anything
    from one case to the next, so only its memory could grow with the cases."""
    suite = 'commonsformat_evals = "0.2"\ntarget = "big"\n' + "".join(
        BIG_SUITE_CASE.format(n=n) for n in range(cases)
    )
    folder = root / f"m{cases}"
    folder.mkdir()
    (folder / "evals.toml").write_text(suite, encoding="utf-8")
    (folder / "big_impl.py").write_text(BIG_IMPL, encoding="utf-8")
    measured = subprocess.run(
        [
            sys.executable,
            "-c",
            MEASURE,
            "run",
            "evals.toml",
            "--impl",
            "big_impl:f",
            "--format",
            "json",
            "-o",
            "out.json",
            "--no-history",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    code, peak = measured.stdout.split()
    assert code == "1"
    document = json.loads((folder / "out.json").read_text(encoding="utf-8"))
    assert [item["status"] for item in document["results"]] == ["fail"] * cases
    return int(peak)


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB is Linux's")
def test_supervisor_memory_does_not_grow_with_the_number_of_huge_observations(
    tmp_path: Path,
) -> None:
    few = _peak_rss_kib(tmp_path, 2)
    many = _peak_rss_kib(tmp_path, 8)
    # Six more cases of 20 MiB each: kept whole, they would add over 120 MiB.
    assert many - few < 40 * 1024, (few, many)


def test_the_pytest_failure_text_shows_hostile_text_as_escapes(hostile_module: Path) -> None:
    from cer.pytest_plugin.suite import failure_text
    from cer.suite.loader import load_suite

    suite = load_suite(hostile_module / "evals.toml")
    case = suite.cases[0]
    result = CaseResult(
        case_name=case.name,
        case_class=case.case_class,
        category=case.category,
        status=Status.ERRORED,
        reason=f"the implementation raised ValueError: {HOSTILE_TEXT}",
        traceback=f"Traceback:\nValueError: {HOSTILE_TEXT}",
    )
    text = failure_text(suite, case, retained(result))
    _assert_inert(text)
    assert "\\x1b[2J" in text


def test_a_run_ended_by_an_error_leaves_no_earlier_report(hostile_module: Path) -> None:
    """The mapping error surfaces only once the run starts; the reports that an
    earlier run wrote at the same paths must not stay behind saying "conformant"."""
    root = hostile_module
    (root / "pyproject.toml").write_text(
        '[tool.cer.categories]\nfunctional = "no-such-model"\n', encoding="utf-8"
    )
    old = "4 cases: 4 passed, 0 failed, 0 errored, 0 skipped in 0.01s — conformant\n"
    (root / "out.txt").write_text(old, encoding="utf-8")
    (root / "r.xml").write_text("<testsuites/>", encoding="utf-8")
    done = _cer(
        "run",
        "evals.toml",
        "--impl",
        "hostile_impl:f",
        "-o",
        "out.txt",
        "--report",
        "junit=r.xml",
        cwd=root,
    )
    _no_traceback(done)
    assert done.returncode == 2, done.stderr
    assert b"no-such-model" in done.stderr
    assert not (root / "out.txt").exists()
    assert not (root / "r.xml").exists()
    assert (root / "evals.toml").is_file()
