"""Tests for loading a suite again after an edit (``cer.suite.reload`` and the loader's
``TableMemo``): a load with the memo parses only the groups of cases whose text
changed, and gives exactly the suite, or the problems, a load without it gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from cer.suite.cache import cache_file, load_suite_cached
from cer.suite.loader import SuiteError, TableMemo, load_suite
from cer.suite.reload import SuiteReloader, reloader_for

COUNT = 1000
"""Enough cases for several groups (cer.suite.loader._cuts)."""
HEAD = 'commonsformat_evals = "0.2"\ntarget = "t"\n\n[adversarial_coverage]\ncategories = ["x"]\n\n'


def case(index: int, value: int | None = None, *, extra: str = "") -> str:
    value = index if value is None else value
    return (
        f'[[cases]]\nname = "c{index}"\ncategory = "functional"\n{extra}'
        f"input = {{ x = {index} }}\nexpect = {{ output = {value} }}\n\n"
    )


def suite_text(cases: list[str], head: str = HEAD, tail: str = "") -> str:
    return head + "".join(cases) + tail


def cases_text(**changed: str) -> list[str]:
    """Every case, those named ``c<N>`` in ``changed`` replaced by their text."""
    return [changed.get(f"c{index}", case(index)) for index in range(COUNT)]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    target = tmp_path / "evals.toml"
    target.write_text(suite_text(cases_text()), encoding="utf-8")
    return target


def reload(path: Path, memo: TableMemo, text: str) -> None:
    """Write ``text`` and check the load with ``memo`` against a load without it."""
    path.write_text(text, encoding="utf-8")
    again = load_suite(path, memo=memo)
    cold = load_suite(path)
    assert again == cold
    assert [c.line for c in again.cases] == [c.line for c in cold.cases]
    assert [c.position for c in again.cases] == [c.position for c in cold.cases]


def test_an_unchanged_file_takes_every_group_from_the_memo(path: Path) -> None:
    memo = TableMemo()
    first = load_suite(path, memo=memo)
    groups = len(memo)
    assert groups > 3
    assert (memo.parsed, memo.reused) == (groups, 0)
    again = load_suite(path, memo=memo)
    assert (memo.parsed, memo.reused) == (0, groups)
    assert again == first == load_suite(path)
    # The cases are the very ones the first load built: nothing was built again.
    assert all(a is b for a, b in zip(again.cases, first.cases, strict=True))


def test_an_edit_of_one_case_parses_its_group_alone(path: Path) -> None:
    memo = TableMemo()
    load_suite(path, memo=memo)
    edited = COUNT // 2 + 7
    reload(path, memo, suite_text(cases_text(**{f"c{edited}": case(edited, 999)})))
    assert (memo.parsed, memo.reused) == (1, len(memo) - 1)
    suite = load_suite(path, memo=memo)
    assert suite.cases[edited].expect == {"output": 999}


def test_lines_after_an_edit_that_adds_lines_move_with_it(path: Path) -> None:
    memo = TableMemo()
    before = load_suite(path, memo=memo)
    grown = case(3, extra='description = """one\ntwo\nthree"""\n')
    reload(path, memo, suite_text(cases_text(c3=grown)))
    after = load_suite(path)
    last = after.cases[-1]
    assert last.line == before.cases[-1].line + 3
    # The groups after the edit come from the memo, their cases built at their new line.
    assert memo.parsed == 1


def test_an_added_and_a_removed_case_load_as_without_the_memo(path: Path) -> None:
    memo = TableMemo()
    load_suite(path, memo=memo)
    cases = cases_text()
    added = [*cases[:10], case(COUNT + 1), *cases[10:]]
    reload(path, memo, suite_text(added))
    # Where a group ends depends on the text there: the group of the new case is
    # parsed, and (at most) the one after it, whose first case it may have become.
    assert memo.parsed <= 2 < len(memo)
    assert len(load_suite(path, memo=memo).cases) == COUNT + 1
    removed = [*cases[: COUNT // 2], *cases[COUNT // 2 + 1 :]]
    reload(path, memo, suite_text(removed))
    assert memo.parsed <= 3  # the group of the insertion, now as before, and this one
    names = [c.name for c in load_suite(path, memo=memo).cases]
    assert f"c{COUNT // 2}" not in names
    assert len(names) == COUNT - 1
    # From the file as it was, an added case at the end leaves every full group as is.
    reload(path, memo, suite_text(cases))
    reload(path, memo, suite_text([*cases, case(COUNT + 5)]))
    assert memo.parsed == 1


def test_a_broken_edit_gives_the_message_of_a_load_without_the_memo(path: Path) -> None:
    memo = TableMemo()
    good = load_suite(path, memo=memo)
    broken_texts = [
        suite_text(cases_text(c5=case(5).replace("expect = {", "expect = {{"))),  # TOML
        suite_text(cases_text(c250=case(7))),  # a duplicate name
        suite_text(cases_text(c9=case(9).replace("category", "categry"))),  # a field
        suite_text(cases_text(), head=HEAD.replace('"0.2"', '"9.9"')),  # the version
    ]
    for text in broken_texts:
        path.write_text(text, encoding="utf-8")
        with pytest.raises(SuiteError) as cold:
            load_suite(path)
        with pytest.raises(SuiteError) as again:
            load_suite(path, memo=memo)
        assert str(again.value) == str(cold.value)
        assert again.value.problems == cold.value.problems
    # A load that failed left the memo as the last good load made it.
    path.write_text(suite_text(cases_text()), encoding="utf-8")
    assert load_suite(path, memo=memo) == good
    assert memo.parsed == 0


def test_suite_level_fields_are_read_afresh(path: Path) -> None:
    memo = TableMemo()
    load_suite(path, memo=memo)
    head = HEAD.replace('["x"]', '["x", "y"]').replace('target = "t"', 'target = "u"')
    reload(path, memo, suite_text(cases_text(), head=head))
    suite = load_suite(path, memo=memo)
    assert suite.adversarial_coverage == ("x", "y")
    assert suite.target == "u"
    assert memo.parsed == 0  # no case changed
    # A table after the cases lies in the last group: that group is always parsed.
    tail = '[properties]\nowner = "a"\n'
    reload(path, memo, suite_text(cases_text(), head=head, tail=tail))
    reload(path, memo, suite_text(cases_text(), head=head, tail=tail.replace('"a"', '"b"')))
    assert load_suite(path, memo=memo).properties == {"owner": "b"}
    assert memo.parsed == 1
    # Defined twice (once in the head, once after the cases): refused as without the memo.
    twice = suite_text(cases_text(), head=head + tail, tail=tail)
    path.write_text(twice, encoding="utf-8")
    with pytest.raises(SuiteError) as cold:
        load_suite(path)
    with pytest.raises(SuiteError) as again:
        load_suite(path, memo=memo)
    assert str(again.value) == str(cold.value)


def test_the_reloader_serves_the_cache_then_fills_the_memo_when_idle(path: Path) -> None:
    written = load_suite_cached(path)
    reloader = reloader_for(load_suite_cached, path)
    assert isinstance(reloader, SuiteReloader)
    reloader.watching = True
    served = reloader.load()
    assert served == written
    assert len(reloader.memo) == 0  # the cache served it: nothing was parsed
    reloader.settle()
    assert len(reloader.memo) > 3
    path.write_text(suite_text(cases_text(c2=case(2, 50))), encoding="utf-8")
    entry = cache_file(path)
    before = entry.read_bytes()
    edited = reloader.load()
    assert edited == load_suite(path)
    assert reloader.memo.parsed == 1
    # The memo took the served suite's cases, not copies: the edit's suite shares them.
    assert edited.cases[-1] is served.cases[-1]
    assert edited.cases[2] is not served.cases[2]
    assert entry.read_bytes() == before  # the entry waits for settle()
    reloader.settle()
    assert entry.read_bytes() != before
    assert load_suite_cached(path) == edited


def test_only_cers_own_loaders_get_a_reloader(path: Path) -> None:
    plain = reloader_for(load_suite, path)
    assert plain is not None and not plain.cached
    plain.watching = True
    assert plain.load() == load_suite(path)
    plain.settle()
    assert not cache_file(path).exists()
    assert reloader_for(lambda p: load_suite(p), path) is None


def test_without_watching_each_load_is_the_plain_one(path: Path) -> None:
    reloader = reloader_for(load_suite_cached, path)
    assert reloader is not None
    first = reloader.load()
    assert first == load_suite(path)
    assert cache_file(path).exists()  # written at once, as load_suite_cached does
    assert len(reloader.memo) == 0
    # Watching starts after that load: settle() fills the memo from the file.
    reloader.watching = True
    reloader.settle()
    assert len(reloader.memo) > 3
    path.write_text(suite_text(cases_text(c9=case(9, 90))), encoding="utf-8")
    assert reloader.load() == load_suite(path)
    assert reloader.memo.parsed == 1
