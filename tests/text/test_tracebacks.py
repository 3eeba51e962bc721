"""Tracebacks show the implementation's frames, and the report its failing lines."""

from __future__ import annotations

import os
from pathlib import Path

from cer.model import SourceAccess
from cer.reports.text import render_report
from cer.suite.loader import load_suite
from cer.text import tracebacks
from cer.text.tracebacks import CodeFrame, NoCode, Site, code_frame, failure_site, trim
from support import Module

RUNNER = tracebacks.RUNNER_DIR

TWO_SUITE = """
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "boom"
category = "functional"
input = { x = 2 }
expect = { output = 4 }

[[cases]]
name = "fine"
category = "functional"
input = { x = 1 }
expect = { output = 2 }
"""


def _traceback(user: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "{RUNNER}/worker.py", line 253, in _execute\n'
        "    target.invoke(view, box)\n"
        f'  File "{RUNNER}/worker.py", line 177, in _call\n'
        "    box[0] = func(*args, **kwargs)\n"
        "             ^^^^^^^^^^^^^^^^^^^^^\n"
        f'  File "{user}", line 3, in helper\n'
        '    raise KeyError("nope")\n'
        "KeyError: 'nope'\n"
    )


def test_trim_hides_the_runner_frames_and_says_how_many() -> None:
    trimmed = trim(_traceback("/src/impl.py"))
    assert trimmed == (
        "Traceback (most recent call last):\n"
        "  [2 runner frames hidden]\n"
        '  File "/src/impl.py", line 3, in helper\n'
        '    raise KeyError("nope")\n'
        "KeyError: 'nope'\n"
    )


def test_trim_hides_importlib_on_the_way_to_the_module() -> None:
    text = (
        "Traceback (most recent call last):\n"
        f'  File "{RUNNER}/worker.py", line 704, in load\n'
        "    obj = importlib.import_module(module_name)\n"
        f'  File "{os.sep}usr{os.sep}lib{os.sep}importlib{os.sep}__init__.py", line 126, in '
        "import_module\n"
        "    return _bootstrap._gcd_import(name[level:], package, level)\n"
        '  File "<frozen importlib._bootstrap>", line 1204, in _gcd_import\n'
        '  File "<frozen importlib._bootstrap_external>", line 940, in exec_module\n'
        '  File "/src/broken.py", line 3, in <module>\n'
        "    y = undefined_name\n"
        "NameError: name 'undefined_name' is not defined"
    )
    assert trim(text).splitlines()[1:3] == [
        "  [4 runner frames hidden]",
        '  File "/src/broken.py", line 3, in <module>',
    ]


def test_trim_leaves_a_traceback_without_runner_frames_alone() -> None:
    text = 'Traceback (most recent call last):\n  File "/a.py", line 1, in f\n    x\nE: y\n'
    assert trim(text) == text


def test_the_failure_site_is_the_innermost_implementation_frame() -> None:
    assert failure_site(_traceback("/src/impl.py")) == Site("/src/impl.py", 3, "helper")
    assert failure_site("no traceback here") is None
    assert failure_site(None) is None


def loaded(*paths: Path) -> SourceAccess:
    """What a run without a sandbox that loaded ``paths`` lets a code frame read."""
    return SourceAccess(files=tuple(str(p) for p in paths))


def test_a_code_frame_marks_the_failing_line(tmp_path: Path) -> None:
    source = tmp_path / "impl.py"
    source.write_text("a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\n", encoding="utf-8")
    frame = code_frame(Site(str(source), 3, "g"), loaded(source))
    assert isinstance(frame, CodeFrame)
    assert frame.render(where="impl.py") == [
        "at impl.py:3 in g",
        "  1 | a = 1",
        "  2 | b = 2",
        "> 3 | c = 3",
        "  4 | d = 4",
        "  5 | e = 5",
    ]


def test_a_code_frame_escapes_what_the_file_holds(tmp_path: Path) -> None:
    source = tmp_path / "impl.py"
    source.write_text("x = '\x1b[2J'\n" + "y" * 500 + "\n", encoding="utf-8")
    frame = code_frame(Site(str(source), 1), loaded(source))
    assert isinstance(frame, CodeFrame)
    assert "\x1b" not in "".join(frame.render()) and "\\x1b" in frame.lines[0][1]
    assert len(frame.lines[1][1]) == tracebacks.MAX_LINE


def no_code(frame: object) -> str:
    assert isinstance(frame, NoCode), frame
    return frame.why


def test_only_a_regular_bounded_python_file_is_read(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("secret\n", encoding="utf-8")
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    big = tmp_path / "big.py"
    big.write_bytes(b"x = 1\n" * (tracebacks.MAX_SOURCE // 6 + 10))
    short = tmp_path / "short.py"
    short.write_text("x = 1\n", encoding="utf-8")
    missing = tmp_path / "missing.py"
    access = loaded(text, fifo, big, short, missing)
    assert "not a Python file" in no_code(code_frame(Site(str(text), 1), access))
    assert "not a regular file" in no_code(code_frame(Site(str(fifo), 1), access))
    assert "larger than" in no_code(code_frame(Site(str(big), 1), access))
    assert "not a Python file" in no_code(code_frame(Site("relative.py", 1), access))
    assert "could not be opened" in no_code(code_frame(Site(str(missing), 1), access))
    assert "no line 9" in no_code(code_frame(Site(str(short), 9), access))
    assert code_frame(None, access) is None


def test_the_report_names_the_implementation_line(module: Module) -> None:
    module.suite(TWO_SUITE)
    name = module.impl(
        """
        def helper(x):
            if x == 2:
                raise KeyError("nope")
            return x * 2

        def f(x):
            return helper(x)
        """
    )
    run = module.run(f"{name}:f")
    report = render_report(run, load_suite(module.root / "evals.toml"), verbose=True)
    assert f"      at {module.root / name}.py:4 in helper\n" in report
    assert '      > 4 |         raise KeyError("nope")\n' in report
    assert "runner frames hidden]" in report
    assert "cer/worker.py" not in report


def test_an_implementation_that_does_not_import_is_reported_once(module: Module) -> None:
    module.suite(TWO_SUITE)
    name = module.impl("import os\ny = undefined_name\n")
    run = module.run(f"{name}:f")
    report = render_report(run, load_suite(module.root / "evals.toml"))
    assert report.count("undefined_name") == 3  # note, code frame, traceback line: not its last
    assert "‼ ERROR 2 cases not run: the Python implementation could not be loaded" in report
    assert "> 2 | y = undefined_name" in report
    assert "boom" not in report and "[2 runner frames hidden]" not in report
    assert "runner frames hidden]" in report


def test_the_innermost_frame_of_a_stack_dump_is_the_first(tmp_path: Path) -> None:
    dump = (
        f"{tracebacks.STACK_HEADING}\n"
        "Thread 0x00007f0000000001 (most recent call first):\n"
        '  File "/src/other.py", line 9 in wait\n'
        "\n"
        "Current thread 0x00007f0000000002 (most recent call first):\n"
        '  File "/src/calc.py", line 21 in count_symbols\n'
        '  File "/src/calc.py", line 33 in evaluate\n'
        f'  File "{RUNNER}/worker.py", line 177 in _call\n'
        '  File "<frozen runpy>", line 88 in _run_code\n'
    )
    assert failure_site(dump) == Site("/src/calc.py", 21, "count_symbols")
    trimmed = trim(dump)
    assert "  [2 runner frames hidden]" in trimmed and "worker.py" not in trimmed
