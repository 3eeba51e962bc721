"""The backend of a command implementation: which driver runs the cases, and the cases
a command cannot run."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from cer.categories import CALL
from cer.engine.command.harness import Harness
from cer.engine.command.identity import command_identity
from cer.engine.command.per_case import PerCase
from cer.engine.command.process import fail_all
from cer.engine.execution import Execution
from cer.judge.verdict import skipped

if TYPE_CHECKING:
    from cer.engine.plan import Planned


class CommandExecution(Execution):
    """The backend of a command implementation: a long-lived harness (``command``), or
    one process per case in :class:`PerCaseExecution` (``command-per-case``). Each
    driver ends its own processes before :meth:`run` returns, so there is nothing left
    to stop or kill after it."""

    driver: type[Harness | PerCase] = Harness
    """What runs the cases, given the execution and the command's words."""

    def run(self, planned: list[Planned]) -> None:
        if planned:
            execute(self, planned)

    def stop(self) -> None:
        pass

    def kill(self) -> None:
        pass


class PerCaseExecution(CommandExecution):
    """The backend of a command run once per case (``command-per-case``)."""

    driver = PerCase


def execute(execution: CommandExecution, planned: list[Planned]) -> None:
    """Run ``planned`` cases against the command in ``execution.options``.

    Cases whose category runs through a Python entry-point model are skipped: such a
    model calls the implementation from Python, which a command cannot offer.
    """
    options = execution.options
    try:
        words = shlex.split(options.impl)
    except ValueError as exc:
        words, problem = [], f"cannot split the command {options.impl!r}: {exc}"
    else:
        problem = "" if words else "the implementation command is empty"
    execution.implementation_id, _ = command_identity(options.kind, words)
    runnable: list[Planned] = []
    for item in planned:
        if item.model != CALL:
            execution.record(
                skipped(
                    item.case,
                    f"category not supported by command implementations: {item.case.category} "
                    f"(its execution model {item.model} runs in Python)",
                )
            )
        else:
            runnable.append(item)
    if not runnable:
        return
    if problem:
        fail_all(execution, runnable, problem, "")
        return
    if options.max_memory is not None:
        execution.notes.append("--max-memory does not apply to command implementations")
    execution.driver(execution, words).run(runnable)
