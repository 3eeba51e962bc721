"""The HTML report of the CommonMark-style bench suite: ``python bench/html_report.py``.

Writes the 652-case suite that ``bench/run.py`` times (documents built from CommonMark
snippets, expectations rendered by markdown-it-py, each case tagged with the spec
sections it exercises as ``upstream-section:NAME``) to a folder, records runs in that
folder's history, and writes the HTML report of the last one, charted over them all:

1. the reference adapter (one shared ``MarkdownIt("commonmark")``): conformant;
2. an adapter that leaves raw HTML out (``html=False``, a plausible misconfiguration):
   the cases with HTML blocks fail, and the page shows where.

Options: ``--out FILE`` (default ``bench/commonmark-report.html``, git-ignored),
``--keep DIR`` to write the suite into DIR and keep it (default: a temporary folder).
Needs markdown-it-py and Jinja2 (``pip install 'cer-tui[html]' markdown-it-py``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from run import CM_ADAPTER, HERE, cer_command, child_env, commonmark_cases, write_module

MISCONFIGURED = '''
from markdown_it import MarkdownIt

_PARSER = MarkdownIt("commonmark", {"html": False})


def render(markdown):
    """Raw HTML switched off: blocks and inline HTML come out escaped."""
    return _PARSER.render(markdown)
'''


def build(folder: Path) -> Path:
    """The suite and both adapters in ``folder``; the suite's path."""
    write_module(folder, commonmark_cases(652), "cm_adapter", CM_ADAPTER, "render", "html")
    (folder / "cm_no_html.py").write_text(MISCONFIGURED, encoding="utf-8")
    return folder / "evals.toml"


def cer(folder: Path, *args: str) -> None:
    done = subprocess.run(
        [cer_command(), *args], cwd=folder, env=child_env(), capture_output=True, text=True
    )
    if done.returncode not in (0, 1):
        sys.exit(f"cer {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    sys.stdout.write(done.stdout.splitlines()[-1] + "\n" if done.stdout else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "commonmark-report.html")
    parser.add_argument("--keep", type=Path, metavar="DIR")
    args = parser.parse_args()
    out = args.out.resolve()
    with tempfile.TemporaryDirectory(prefix="cer-cm-") as temporary:
        folder = (args.keep or Path(temporary) / "commonmark").resolve()
        build(folder)
        cer(folder, "run", "evals.toml", "--impl", "cm_adapter:render", "-q")
        cer(
            folder,
            "run",
            "evals.toml",
            "--impl",
            "cm_no_html:render",
            "-q",
            "--report",
            f"html={out}",
        )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
