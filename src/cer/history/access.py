"""The one connection a history (:class:`cer.history.database.History`) holds, which
its recording and its questions both go through for the same three things: one lock, a
database error turned into a :class:`HistoryError` naming the file, and the schema
checked to be cer's own before anything is read or written."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cer.history.records import HistoryError, HistoryUntrusted
from cer.history.schema import APPLICATION_ID, expected_schema, normal_sql


class Access:
    """An open history's connection, its lock and the checks around every use of it."""

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        self.path = path
        self.db = db
        self.lock = threading.RLock()

    def verify_schema(self) -> None:
        """Refuse a database whose schema is not (a part of) the one cer creates.

        Every object in ``sqlite_master`` must be one that cer's own creation script
        makes, declared with the same statement; objects not there yet are fine (a new
        file, or one that holds only the tables of ``schema.sql``), since cer creates
        them. Anything else (a trigger, a view, an extra table or index, a table whose
        columns or constraints were changed) raises :class:`HistoryUntrusted`. Called on
        opening, inside every recording transaction and before every read, so that a
        change made while the file is open is caught before it can matter.
        """
        expected = expected_schema()
        problems = []
        app_id = int(self.db.execute("PRAGMA application_id").fetchone()[0])
        if app_id not in (0, APPLICATION_ID):
            problems.append(f"it belongs to another application (application_id {app_id})")
        rows = self.db.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid"
        ).fetchall()
        for kind, name, table, sql in rows:
            if str(name).startswith("sqlite_stat"):
                continue  # statistics ANALYZE keeps; they only guide the query planner
            found = expected.get(str(name))
            if found is None:
                where = f" on {table}" if kind in ("trigger", "index") else ""
                problems.append(f"it holds a {kind} {name!r}{where} that cer never creates")
            elif found != (kind, table, normal_sql(sql)):
                problems.append(f"its {kind} {name!r} is not declared the way cer declares it")
        if problems:
            raise HistoryUntrusted(self.path, problems)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """A read of the history, after checking its schema is still cer's own."""
        with self.errors("read"):
            self.verify_schema()
            yield

    @contextmanager
    def errors(self, doing: str) -> Iterator[None]:
        """Turn database exceptions into HistoryError naming the file and the action."""
        with self.lock:
            try:
                yield
            except sqlite3.Error as exc:
                raise HistoryError(f"cannot {doing} {self.path}: {exc}") from exc
