"""Tests for the cache of validated suites (``cer.suite.cache``): it serves an unchanged
suite, and never a stale, corrupt or foreign entry."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import marshal
from pathlib import Path

import pytest

import cer
from cer.model import CASE_FIELDS, case_columns
from cer.suite import cache as suitecache
from cer.suite.cache import cache_file, load_suite_cached
from cer.suite.loader import SuiteError, load_suite, parse_suite_columns

SUITE = """commonsformat_evals = "0.2"
target = "demo"

[properties]
owner = "someone"

[[cases]]
name = "first"
category = "functional"
tags = ["a", "b"]
input = { text = "hi", n = 3, f = -0.0, big = 123456789012345678901234567890 }
expect = { html = "<p>hi</p>", tree = { items = [1, 2.5, "x", true] } }

[[adversarial]]
name = "second"
category = "robustness"
description = "odd input"
verifies = ["C1"]
severity = "high"
input = { text = "" }
expect = { error = true }
"""


def write(folder: Path, text: str = SUITE) -> Path:
    path = folder / "evals.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make a full load impossible: only the cache can answer."""

    def refuse(*args: object) -> None:
        raise AssertionError("the suite was parsed again")

    monkeypatch.setattr(suitecache, "parse_suite_columns", refuse)


def test_first_load_writes_an_entry_equal_to_a_plain_load(tmp_path: Path) -> None:
    path = write(tmp_path)
    suite = load_suite_cached(path)
    assert suite == load_suite(path)
    assert cache_file(path).is_file()
    assert cache_file(path).parent == tmp_path / ".cer" / "cache"
    assert "*" in (tmp_path / ".cer" / "cache" / ".gitignore").read_text().splitlines()


def test_unchanged_suite_is_served_from_the_cache(tmp_path: Path, no_parse: None) -> None:
    path = write(tmp_path)
    expected = load_suite(path)
    suitecache._write_entry(cache_file(path), suitecache._identity(path.read_bytes()), expected)
    served = load_suite_cached(path)
    assert served == expected
    assert served.cases[0].tags == ("a", "b")
    assert served.cases[1].verifies == ("C1",)
    assert served.content_hash == expected.content_hash
    assert served.properties == {"owner": "someone"}


def test_a_changed_suite_is_never_served_the_old_entry(tmp_path: Path) -> None:
    path = write(tmp_path)
    load_suite_cached(path)
    changed = SUITE.replace('html = "<p>hi</p>"', 'html = "<p>bye</p>"')
    write(tmp_path, changed)
    suite = load_suite_cached(path)
    assert suite.cases[0].expect["html"] == "<p>bye</p>"
    assert suite == load_suite(path)
    # and the entry now holds the new content
    assert load_suite_cached(path).cases[0].expect["html"] == "<p>bye</p>"


def test_a_same_sized_change_is_caught(tmp_path: Path) -> None:
    path = write(tmp_path)
    load_suite_cached(path)
    write(tmp_path, SUITE.replace("<p>hi</p>", "<p>HI</p>"))
    assert load_suite_cached(path).cases[0].expect["html"] == "<p>HI</p>"


def test_a_corrupt_payload_is_ignored_and_rebuilt(tmp_path: Path) -> None:
    path = write(tmp_path)
    load_suite_cached(path)
    entry = cache_file(path)
    data = bytearray(entry.read_bytes())
    at = data.rindex(b"<p>hi</p>")
    data[at + 3 : at + 5] = b"yo"  # same length: only the checksum can tell
    entry.write_bytes(bytes(data))
    suite = load_suite_cached(path)
    assert suite.cases[0].expect["html"] == "<p>hi</p>"
    assert b"<p>hi</p>" in entry.read_bytes()


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: b"",
        lambda data: b"not a cache at all\n",
        lambda data: data.replace(b"cer suite cache", b"cer suite cachX", 1),
        lambda data: data.replace(b"\n", b" ", 2),
    ],
    ids=["truncated", "empty", "foreign file", "wrong magic", "no header line"],
)
def test_a_damaged_entry_is_ignored(tmp_path: Path, damage: object) -> None:
    path = write(tmp_path)
    load_suite_cached(path)
    entry = cache_file(path)
    entry.write_bytes(damage(entry.read_bytes()))  # type: ignore[operator]
    assert load_suite_cached(path) == load_suite(path)


def _forge(path: Path, **changes: object) -> None:
    """Rewrite the entry's header with ``changes``, the checksum kept right, so that
    only the identity check can refuse it."""
    entry = cache_file(path)
    data = entry.read_bytes()
    end = data.index(b"\n", len(b"cer suite cache\n"))
    header = json.loads(data[len(b"cer suite cache\n") : end])
    header.update(changes)
    entry.write_bytes(
        b"cer suite cache\n" + json.dumps(header, sort_keys=True).encode() + data[end:]
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"format": suitecache.FORMAT + 1},
        {"cer": "0.0.0-other"},
        {"marshal": 1},
        {"python": [2, 7, 18]},
    ],
    ids=["cache format", "cer version", "marshal version", "python version"],
)
def test_an_entry_of_another_version_is_ignored(
    tmp_path: Path, changes: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path)
    load_suite_cached(path)
    _forge(path, **changes)
    parsed: list[Path] = []
    real = parse_suite_columns

    def counting(raw: bytes, where: Path, **options: str) -> object:
        parsed.append(where)
        return real(raw, where, **options)

    monkeypatch.setattr(suitecache, "parse_suite_columns", counting)
    assert load_suite_cached(path) == load_suite(path)
    assert parsed == [path]


def test_cer_version_is_part_of_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path)
    load_suite_cached(path)
    monkeypatch.setattr(cer, "__version__", "9.9.9")
    monkeypatch.setattr(
        suitecache, "parse_suite_columns", lambda *a, **k: (_ for _ in ()).throw(KeyError())
    )
    with pytest.raises(KeyError):
        load_suite_cached(path)


def test_an_entry_made_for_another_suite_is_not_served(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    first = write(one)
    second = write(two, SUITE.replace('"first"', '"other"'))
    load_suite_cached(first)
    cache_file(second).parent.mkdir(parents=True)
    cache_file(second).write_bytes(cache_file(first).read_bytes())
    assert load_suite_cached(second).cases[0].name == "other"


def _column(name: str) -> int:
    return CASE_FIELDS.index(name)


def _set(columns: list[tuple[object, ...]], name: str, value: tuple[object, ...]) -> None:
    columns[_column(name)] = value


@pytest.mark.parametrize(
    "spoil",
    [
        lambda c: _set(c, "tags", (("a", 1), ())),
        lambda c: _set(c, "tags", (["a", "b"], ())),
        lambda c: _set(c, "input", (b"N", c[_column("input")][1])),
        lambda c: _set(c, "expect", ({"error": True}, c[_column("expect")][1])),
        lambda c: _set(c, "expect", (b"", c[_column("expect")][1])),
        lambda c: _set(c, "position", (2, 1)),
        lambda c: _set(c, "name", ("first",)),
        lambda c: _set(c, "name", ("first", " ")),
        lambda c: _set(c, "case_class", ("functional", "hostile")),
        lambda c: _set(c, "line", ("7", None)),
        lambda c: c.pop(),
    ],
    ids=[
        "a number among tags",
        "tags as a list",
        "input not a packed table",
        "expect not packed",
        "expect empty bytes",
        "positions out of order",
        "a short column",
        "a blank name",
        "an unknown case class",
        "a line as text",
        "a column missing",
    ],
)
def test_an_entry_of_the_wrong_shape_is_not_served(tmp_path: Path, spoil: object) -> None:
    """A payload whose checksum is right but whose columns do not hold a case's fields
    (a bug, or a hand-made entry) is refused, and the entry rebuilt."""
    path = write(tmp_path)
    suite = load_suite(path)
    identity = suitecache._identity(path.read_bytes())
    entry = cache_file(path)
    suitecache._write_entry(entry, identity, suite)
    good = entry.read_bytes()
    columns = case_columns(suite.cases)
    spoil(columns)  # type: ignore[operator]
    table: dict[str, object] = {
        "format_version": "0.2",
        "target": "demo",
        "target_version": None,
        "properties": {},
        "adversarial_coverage": (),
        "warnings": (),
        "columns": tuple(columns),
    }
    payload = marshal.dumps(table)
    header = {**identity, "payload_sha256": hashlib.sha256(payload).hexdigest()}
    entry.write_bytes(
        b"cer suite cache\n" + json.dumps(header, sort_keys=True).encode() + b"\n" + payload
    )
    assert load_suite_cached(path).cases[0].tags == ("a", "b")
    assert entry.read_bytes() == good


def test_the_entry_holds_packed_tables_and_serves_equal_cases(tmp_path: Path) -> None:
    path = write(tmp_path)
    load_suite_cached(path)
    served = load_suite_cached(path)
    assert served == load_suite(path)
    assert served.cases[0].input == {
        "text": "hi",
        "n": 3,
        "f": -0.0,
        "big": 123456789012345678901234567890,
    }
    assert str(served.cases[0].input["f"]) == "-0.0"
    assert served.cases[1].expect == {"error": True}


def test_a_suite_of_hand_built_cases_is_written_packed(tmp_path: Path) -> None:
    """A suite whose cases hold plain tables (built by hand) gets an entry all the same."""
    path = write(tmp_path)
    loaded = load_suite(path)
    plain = dataclasses.replace(
        loaded, cases=tuple(dataclasses.replace(case) for case in loaded.cases)
    )
    suitecache._write_entry(cache_file(path), suitecache._identity(path.read_bytes()), plain)
    assert (
        suitecache._read_entry(cache_file(path), suitecache._identity(path.read_bytes()), path)
        == loaded
    )


def test_an_invalid_suite_still_raises_and_writes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, SUITE.replace("category", "categry", 1))
    with pytest.raises(SuiteError):
        load_suite_cached(path)
    assert not cache_file(path).exists()


def test_dates_are_loaded_without_an_entry(tmp_path: Path) -> None:
    path = write(tmp_path, SUITE.replace("n = 3", "n = 1979-05-27"))
    suite = load_suite_cached(path)
    assert str(suite.cases[0].input["n"]) == "1979-05-27"
    assert not cache_file(path).exists()


def test_an_unwritable_cache_folder_costs_nothing_but_time(tmp_path: Path) -> None:
    path = write(tmp_path)
    (tmp_path / ".cer").write_text("a file where the folder would be")
    assert load_suite_cached(path) == load_suite(path)


def test_an_unreadable_suite_is_a_suite_error(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="cannot read"):
        load_suite_cached(tmp_path / "missing.toml")


def test_a_served_suite_shares_repeated_values(tmp_path: Path, no_parse: None) -> None:
    """The entry keeps no references between equal values; the reader shares them again,
    so a served suite is as small as a freshly loaded one."""
    cases = "".join(
        f'[[cases]]\nname = "c{n}"\ncategory = "functional"\ntags = ["t"]\n'
        f'severity = "high"\nexpect = {{ out = {n} }}\n'
        for n in range(3)
    )
    path = write(tmp_path, 'commonsformat_evals = "0.2"\n' + cases)
    suitecache._write_entry(
        cache_file(path), suitecache._identity(path.read_bytes()), load_suite(path)
    )
    first, *others = load_suite_cached(path).cases
    for other in others:
        assert other.category is first.category
        assert other.tags is first.tags
        assert other.severity is first.severity
