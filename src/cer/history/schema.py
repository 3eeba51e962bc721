"""The history database's schema as the runner expects it: the SQL that creates it
(schema.sql plus the extensions kept here), its application id, and the normal form
that an existing database's schema is checked against before anything is read from it."""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Mapping

from cer.resources import schema_sql

APPLICATION_ID = 0x63657231
"""SQLite's ``application_id`` of a history cer made (``cer1``); 0 is accepted too, for
a database made before cer set it or not yet initialised."""


_EXTENSION_SQL = """
CREATE TABLE IF NOT EXISTS cer_meta (
    key TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS cer_runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL UNIQUE REFERENCES eval_runs (run_id),
    suite_path TEXT NOT NULL,
    suite_key TEXT NOT NULL,
    suite_hash TEXT NOT NULL,
    format_version TEXT NOT NULL,
    implementation TEXT NOT NULL,
    notes TEXT NOT NULL,
    recorded_at_ms INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS cer_case_details (
    run_id TEXT NOT NULL,
    case_name TEXT NOT NULL,
    position INTEGER NOT NULL,
    stdout TEXT NOT NULL,
    stderr TEXT NOT NULL,
    traceback TEXT,
    observation TEXT,
    expected TEXT,
    mismatches TEXT NOT NULL,
    PRIMARY KEY (run_id, case_name),
    FOREIGN KEY (run_id, case_name) REFERENCES eval_case_results (run_id, case_name)
);

CREATE TABLE IF NOT EXISTS cer_run_conditions (
    run_id TEXT NOT NULL PRIMARY KEY REFERENCES eval_runs (run_id),
    isolation TEXT NOT NULL,
    sandbox TEXT NOT NULL,
    network TEXT NOT NULL,
    timeout_s REAL NOT NULL,
    jobs INTEGER NOT NULL,
    category_remaps TEXT NOT NULL,
    cer_version TEXT NOT NULL,
    python_version TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS cer_runs_by_suite ON cer_runs (suite_key);

CREATE INDEX IF NOT EXISTS cer_runs_by_hash ON cer_runs (suite_hash);
CREATE INDEX IF NOT EXISTS cer_case_results_by_name ON eval_case_results (case_name);
CREATE INDEX IF NOT EXISTS cer_eval_runs_by_completion ON eval_runs (completed_at_ms);
"""


def creation_sql() -> str:
    """Every statement that creates cer's history: ``schema.sql`` and cer's own."""
    return schema_sql() + "\n" + _EXTENSION_SQL + V2_SQL + V4_SQL + V5_SQL


_SQL_COMMENT = re.compile(r"--[^\n]*")


_SQL_SPACE = re.compile(r"\s+")


_SQL_TIGHT = re.compile(r" ?([(),]) ?")


def normal_sql(sql: object) -> str | None:
    """A declaration with comments and layout removed, so that only a change of meaning
    (a column, a constraint, a clause) makes two declarations differ. A column added by
    ``ALTER TABLE ... ADD COLUMN`` reads the same as one declared last in the table."""
    if sql is None:
        return None
    text = _SQL_COMMENT.sub(" ", str(sql))
    text = _SQL_SPACE.sub(" ", text).strip()
    return _SQL_TIGHT.sub(r"\1", text)


@functools.cache
def expected_schema() -> Mapping[str, tuple[str, str, str | None]]:
    """name → (type, table, normalised declaration) of every object cer creates, read
    from a scratch in-memory database made with the same script (computed once)."""
    scratch = sqlite3.connect(":memory:")
    try:
        scratch.executescript(creation_sql())
        rows = scratch.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")
        return {
            str(name): (str(kind), str(table), normal_sql(sql)) for kind, name, table, sql in rows
        }
    finally:
        scratch.close()


V2_SQL = """
CREATE TABLE IF NOT EXISTS cer_approvals (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_path TEXT NOT NULL,
    suite_key TEXT NOT NULL,
    case_name TEXT NOT NULL,
    constraints TEXT NOT NULL,
    approver TEXT NOT NULL,
    approved_at_ms INTEGER NOT NULL,
    text_hash TEXT NOT NULL,
    from_observation INTEGER NOT NULL CHECK (from_observation IN (0, 1)),
    observed_from TEXT
);

CREATE TABLE IF NOT EXISTS cer_run_coverage (
    run_id TEXT NOT NULL PRIMARY KEY REFERENCES eval_runs (run_id),
    constraints_total INTEGER NOT NULL,
    constraints_covered INTEGER NOT NULL,
    constraints_verified INTEGER,
    constraints_enforceable INTEGER NOT NULL,
    constraints_needs_repair INTEGER NOT NULL
);

CREATE INDEX IF NOT EXISTS cer_approvals_by_suite ON cer_approvals (suite_key);
"""


V4_SQL = """
CREATE TABLE IF NOT EXISTS cer_run_verdict (
    run_id TEXT NOT NULL PRIMARY KEY REFERENCES eval_runs (run_id),
    statement TEXT NOT NULL,
    baseline TEXT,
    known_failures INTEGER,
    regressions INTEGER,
    stale INTEGER
);
"""
"""The verdict sentence each run stated (with its baseline's counts), as its reports
stated it: the history says what the run said, rather than a word made again later
without the baseline it was held against."""


V5_SQL = """
CREATE TABLE IF NOT EXISTS cer_case_fail_classes (
    run_id TEXT NOT NULL,
    case_name TEXT NOT NULL,
    fail_class TEXT NOT NULL,
    PRIMARY KEY (run_id, case_name),
    FOREIGN KEY (run_id, case_name) REFERENCES eval_case_results (run_id, case_name)
);

CREATE TABLE IF NOT EXISTS cer_run_conditions_full (
    run_id TEXT NOT NULL PRIMARY KEY REFERENCES eval_runs (run_id),
    conditions TEXT NOT NULL
);
"""
"""The fail class of each failed or errored case (``mismatch``, ``timed_out``, ...: the
word the supervisor decided), and every condition of a run as JSON
(:meth:`cer.model.RunConditions.to_dict`): the selection, the platform, what was lent,
the baseline and the coverage requirement besides the columns of
``cer_run_conditions``. A run recorded before version 5 has neither: its cases carry no
class and its conditions are the columns it has."""
