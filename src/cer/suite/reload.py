"""Loading one suite file again and again, as a watching session does: each load after
an edit parses only the groups of cases whose text changed (:class:`TableMemo`), and
what a load can put off (writing the suite cache's entry, filling the memo after a
load the cache served) waits until the session is idle (:meth:`SuiteReloader.settle`).

Every load gives the suite a load without the memo gives (:func:`load_suite`, or
:func:`~cer.suite.cache.load_suite_cached`), the same problems and messages included:
the memo only spares parsing text that was parsed before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cer.model import Suite
from cer.suite import cache
from cer.suite.loader import (
    TableMemo,
    _collector_paused,
    load_suite,
    parse_suite_columns,
    read_suite_file,
)

__all__ = ["SuiteReloader", "reloader_for"]


class SuiteReloader:
    """Loads the suite at ``path``; while :attr:`watching`, with a memo of its parsed
    groups kept between loads.

    With ``cached`` the suite cache beside the suite is read and written as
    :func:`~cer.suite.cache.load_suite_cached` reads and writes it; while watching, a
    changed file's entry is written by :meth:`settle`, not by the load waited for.
    """

    def __init__(self, path: Path, *, cached: bool) -> None:
        self.path = Path(path)
        self.cached = cached
        self.watching = False
        """Whether the file is watched: only then do loads keep the memo (it holds about
        a copy of the file's text, worth it only when the file is loaded again and
        again); otherwise each load is the plain one."""
        self.memo = TableMemo()
        self._unwritten: tuple[dict[str, Any], Suite] | None = None
        self._served: Suite | None = None
        """The last suite, when the memo holds nothing of it (the cache served it, or it
        was loaded before watching started)."""

    def load(self) -> Suite:
        """The suite as its file is now; :class:`~cer.suite.loader.SuiteError` when it
        does not load."""
        if not self.watching:
            self.memo.clear()
            plain = cache.load_suite_cached(self.path) if self.cached else load_suite(self.path)
            self._served = plain  # for settle(), should watching start
            return plain
        raw = read_suite_file(self.path)
        identity = cache._identity(raw)
        self._unwritten = self._served = None
        if self.cached and not len(self.memo):
            served = cache._read_entry(cache.cache_file(self.path), identity, self.path)
            if served is not None:
                self._served = served
                return served
        with _collector_paused():
            suite, _ = parse_suite_columns(
                raw, self.path, content_hash=str(identity["suite_sha256"]), memo=self.memo
            )
        if self.cached:
            self._unwritten = (identity, suite)
        return suite

    def settle(self) -> None:
        """Do what the last load put off: write its cache entry, or, when the memo
        holds nothing of it (the cache served it, or watching started after it), parse
        the file once into the memo, sharing that suite's cases rather than holding a
        copy of each, so that the load after the next edit parses one group of cases
        and not all of them. Quiet on any failure (the next load reports the file's
        problems)."""
        unwritten, self._unwritten = self._unwritten, None
        if unwritten is not None:
            identity, suite = unwritten
            with _collector_paused():
                cache._write_entry(cache.cache_file(self.path), identity, suite)
        served, self._served = self._served, None
        if served is not None and self.watching:
            try:
                raw = read_suite_file(self.path)
                digest = hashlib.sha256(raw).hexdigest()
                if digest == served.content_hash:
                    self.memo.adopt(served.cases)
                with _collector_paused():
                    parse_suite_columns(raw, self.path, content_hash=digest, memo=self.memo)
            except Exception:  # a file that broke meanwhile: the next load says so
                self.memo.clear()


def reloader_for(load: Callable[[Path], Suite], path: Path) -> SuiteReloader | None:
    """A reloader standing for ``load`` when it is one of cer's own loaders (with or
    without the suite cache); None for any other (a test's), which is called as is."""
    if load is cache.load_suite_cached:
        return SuiteReloader(path, cached=True)
    if load is load_suite:
        return SuiteReloader(path, cached=False)
    return None
