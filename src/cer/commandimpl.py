"""Implementations that are commands rather than Python objects (``--impl-cmd``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cer.runner import _Execution, _Planned


def execute(execution: _Execution, planned: list[_Planned]) -> None:
    """Run ``planned`` cases against the command in ``execution.options``."""
    from cer.runner import _errored

    for item in planned:
        execution.record(_errored(item.case, "command implementations are not supported yet"))
