"""Runs the history does not hold: a mark beside the database for each suite whose
newest run could not be recorded (the disk was full, a file size limit was imposed
from outside, the database could not be opened).

``cer run --failed`` reads the newest recorded run to decide what to rerun. Had the
run after it gone unrecorded, that older run would decide: an older green run would
send ``--failed`` away with nothing to do while the code fails. The mark says that
the history is behind, so ``--failed`` runs the whole suite instead.

The mark is an empty file named after the suite (nothing to write but a directory
entry, which a full disk or a size limit still allows), removed when a run of the
whole suite is recorded again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from cer.engine.options import STOPPED
from cer.history.records import NOT_SELECTED, suite_key
from cer.model import RunResult, Status

__all__ = ["clear_gap", "gap_marker", "has_gap", "mark_gap", "ran_whole_suite"]


def gap_marker(history_path: str | Path, suite_path: str | Path) -> Path:
    """The mark for ``suite_path`` beside the database at ``history_path``."""
    digest = hashlib.sha256(suite_key(suite_path).encode("utf-8", "surrogatepass")).hexdigest()
    path = Path(history_path)
    return path.with_name(f"{path.name}.unrecorded-{digest[:16]}")


def mark_gap(history_path: str | Path, suite_path: str | Path) -> bool:
    """Leave the mark (best effort); False when even that could not be written."""
    marker = gap_marker(history_path, suite_path)
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT, 0o644))
    except OSError:
        return False
    return True


def has_gap(history_path: str | Path, suite_path: str | Path) -> bool:
    """Whether a run of ``suite_path`` went unrecorded since its last whole run."""
    return gap_marker(history_path, suite_path).exists()


def clear_gap(history_path: str | Path, suite_path: str | Path) -> None:
    """Remove the mark: a run of the whole suite is recorded again."""
    with contextlib.suppress(OSError):
        gap_marker(history_path, suite_path).unlink(missing_ok=True)


def ran_whole_suite(run: RunResult) -> bool:
    """Whether ``run`` ran every case it could (none left out as deselected, to
    another shard, or not reached because the run stopped at ``-x`` or ``--max-fail``):
    only such a run stands for the suite in place of one lost."""
    return not any(
        result.status is Status.SKIPPED
        and (result.reason in NOT_SELECTED or (result.reason or "").startswith(STOPPED))
        for result in run.results
    )
