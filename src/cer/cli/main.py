"""The ``cer`` program's top level: the parser of the subcommands, and the dispatch to
the handler of the one given.

Each subcommand is a module of its own that declares its arguments and its handler
(``add_commands(subparsers)``, which sets ``handler`` on its parser), as a pytest plugin
adds its own options. This module only knows which module declares which subcommand
(:data:`SUBCOMMANDS`) and imports, for a command line naming one, that module alone:
``cer check`` never imports what ``cer run`` needs, nor ``cer run`` what ``cer derive``
needs. ``cer --help`` and a command line naming none import them all.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Mapping, Sequence
from importlib import import_module
from types import ModuleType

from cer import __version__, process_tree
from cer.cli import workflow_commands
from cer.cli.exits import ExitCode, Terminated, interrupted_code, interruption, print_error
from cer.cli.workflow_commands import CommandPause

SUBCOMMANDS: Mapping[str, str] = {
    "run": "cer.cli.run",
    "history": "cer.cli.history",
    "diff": "cer.cli.history",
    "check": "cer.cli.check",
    "merge": "cer.cli.merge",
    "baseline": "cer.cli.baseline",
    "derive": "cer.cli.review",
    "approve": "cer.cli.review",
    "discard": "cer.cli.review",
    "init": "cer.cli.init",
}
"""Each subcommand's name and the module that declares it, in the order ``cer --help``
lists them."""


def modules_for(argv: Sequence[str] | None) -> list[str]:
    """The modules whose subcommands the parser of ``argv`` needs: the one module of
    the subcommand ``argv`` names, or every one (``argv`` None, ``--help``, a word
    that names no subcommand, nothing)."""
    if argv and argv[0] in SUBCOMMANDS:
        return [SUBCOMMANDS[argv[0]]]
    return list(dict.fromkeys(SUBCOMMANDS.values()))


def import_commands(argv: Sequence[str] | None = None) -> list[ModuleType]:
    """Import the subcommand modules :func:`modules_for` names (:mod:`cer.cli.entry`
    does it before the command runs, while the garbage collector is off)."""
    return [import_module(name) for name in modules_for(argv)]


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``cer`` parser: every subcommand, or (``argv``) only the one it names."""
    parser = argparse.ArgumentParser(
        prog="cer",
        description="Verify an implementation against a Commons Format eval suite.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"cer {__version__}")
    parser.set_defaults(handler=None)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in import_commands(argv):
        module.add_commands(commands)
    return parser


def _stop_on_signals() -> None:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` in the main thread, once: a
    second signal while the run is being stopped is ignored, so that the cleanup
    (ending every worker and what it left) is not cut short."""

    def handler(signum: int, frame: object) -> None:
        for each in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(each, signal.SIG_IGN)
        raise Terminated(signum)

    for each in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(each, handler)


def _forgiving_streams() -> None:
    """Let stdout and stderr write any text: a character UTF-8 cannot hold (a lone
    surrogate that reached a message) becomes its escape instead of a traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """The ``cer`` program. Called without ``argv`` (as the program itself), it also
    adopts the orphans of the processes it starts (cer.process_tree) and stops cleanly on
    SIGTERM and SIGHUP as on Ctrl-C."""
    _forgiving_streams()
    if argv is None:
        process_tree.adopt_orphans()
        _stop_on_signals()
    pause = CommandPause.from_environment(sys.stdout)
    workflow_commands.PAUSE = pause
    pause.pause()
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:
        print_error(f"{interruption(exc)}")
        return interrupted_code(exc)
    finally:
        sys.stdout.flush()
        pause.resume()


def _main(argv: Sequence[str] | None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words)
    args = parser.parse_args(words)
    if args.handler is None:
        parser.print_help()
        return ExitCode.USAGE
    return int(args.handler(args))
