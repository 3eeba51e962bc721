"""A file name in a traceback is the implementation's claim, never a reason for cer to
read or open a file (docs/trust.md, "What the implementation says is only data").

An implementation names, in its traceback, a credentials file outside what the sandbox
lets it read: directly (code compiled under that name), through a symbolic link it
passes off as a module it loaded, and as names an editor would take for an option or a
command (``+silent !touch pwned``, ``-c``). ``cer run``'s code frame and cer-tui's ``E``
must show the path as text, say why no code is shown, and neither print the file nor
start the editor on it; a file the implementation really loaded still gets its frame.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from cer import sandbox
from cer.cli.main import main
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import SourceAccess
from cer.suite.loader import load_suite
from cer.text.tracebacks import CodeFrame, NoCode, Site, SourceReader
from cer.tui.app import CerApp, create_app
from cer.tui.state.editor import editor_command
from tui.helpers import run_screen, settle

SECRET = "API_KEY = 'do-not-print-me'\n"

SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "named"
category = "functional"
input = { how = "named" }
expect = { output = "ok" }

[[cases]]
name = "linked"
category = "functional"
input = { how = "linked" }
expect = { output = "ok" }

[[cases]]
name = "option"
category = "functional"
input = { how = "option" }
expect = { output = "ok" }

[[cases]]
name = "honest"
category = "functional"
input = { how = "honest" }
expect = { output = "ok" }
"""

IMPL = """
import sys, types

SECRET = {secret!r}
LINK = {link!r}

# Passed off as a module the import loaded: its file is a link to the secret.
fake = types.ModuleType("claimed")
fake.__file__ = LINK
sys.modules["claimed"] = fake


def _raise_in(name):
    exec(compile("raise ValueError('from ' + __name__)", name, "exec"), {{"__name__": name}})


def f(how):
    if how == "named":
        _raise_in(SECRET)
    if how == "linked":
        _raise_in(LINK)
    if how == "option":
        _raise_in("+silent !touch pwned")
    raise ValueError("an honest failure")
"""

needs_sandbox = pytest.mark.skipif(
    not sandbox.status().available, reason="the sandbox is not available here"
)


def _module(tmp_path: Path) -> Path:
    module = tmp_path / "module"
    # The history's folder: the sandbox refuses the implementation all of it.
    secret_dir = module / ".cer"
    secret_dir.mkdir(parents=True)
    secret = secret_dir / "creds.py"
    secret.write_text(SECRET, encoding="utf-8")
    link = module / "claimed.py"
    link.symlink_to(secret)
    (module / "evals.toml").write_text(SUITE, encoding="utf-8")
    (module / "claims.py").write_text(
        IMPL.format(secret=str(secret), link=str(link)), encoding="utf-8"
    )
    return module


@needs_sandbox
def test_the_code_frame_reads_only_what_the_implementation_loaded_and_could_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _module(tmp_path)
    monkeypatch.chdir(module)
    code = main(["run", "evals.toml", "--impl", "claims:f", "--no-history", "-q"])
    out = capsys.readouterr().out
    assert code == 1
    assert "do-not-print-me" not in out
    # Refused by Landlock when read with the implementation's rights; in its world the
    # file is absent, so the implementation never loaded it.
    refused = (
        "(no code shown: it could not be opened with the implementation's rights",
        "(no code shown: not a file the implementation loaded",
    )
    assert any(f"at .cer/creds.py:1 in <module> {why}" in out for why in refused), out
    assert "at claimed.py:1 in <module> (no code shown: " in out
    assert "at +silent !touch pwned:1 in <module> (no code shown: not a Python file" in out
    # A file the implementation did load, and could read, still gets its frame.
    assert '> 24 |     raise ValueError("an honest failure")' in out


@needs_sandbox
def test_a_link_out_of_the_read_set_is_refused_by_the_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _module(tmp_path)
    monkeypatch.chdir(module)
    run = run_suite(load_suite(module / "evals.toml"), RunOptions(impl="claims:f", timeout=10))
    access = run.source_access
    assert access is not None and access.confined_reader
    # Even listed as loaded, a link whose target the implementation could not read is
    # not read: the confined reader resolves it under the run's own rules.
    link = str(module / "claimed.py")
    listed = replace(access, files=(*access.files, link))
    frame = SourceReader(listed).frame(Site(link, 1))
    assert isinstance(frame, NoCode)
    assert "could not be opened with the implementation's rights" in frame.why
    honest = SourceReader(listed).frame(Site(str(module / "claims.py"), 24))
    assert isinstance(honest, CodeFrame)
    assert "an honest failure" in "".join(honest.render())


def test_a_claimed_file_is_refused_without_a_sandbox_too(tmp_path: Path) -> None:
    secret = tmp_path / "creds.py"
    secret.write_text(SECRET, encoding="utf-8")
    loaded = tmp_path / "impl.py"
    loaded.write_text("x = 1\n", encoding="utf-8")
    reader = SourceReader(SourceAccess(files=(str(loaded),)))
    frame = reader.frame(Site(str(secret), 1))
    assert isinstance(frame, NoCode)
    assert "do-not-print-me" not in "".join(frame.render())
    assert isinstance(SourceReader(None).frame(Site(str(loaded), 1)), NoCode)


@pytest.mark.parametrize("name", ["+silent !touch pwned", "-c", "--cmd=!id", "+1", "-"])
def test_no_file_name_becomes_an_editor_option(name: str) -> None:
    for editor in ("vi", "vim", "nvim", "nano", "emacs", "code", "subl", "ed"):
        command = editor_command(editor, Path(name), 7)
        target = command[-1].removesuffix(":7")
        assert target == str(Path(name).absolute()), command
        assert not any(word.startswith(("+silent", "-c", "--cmd")) for word in command[1:])
        if editor in ("vi", "vim", "nvim", "nano"):
            assert command[-3:] == ["+7", "--", target]


@needs_sandbox
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_e_opens_only_a_file_the_implementation_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _module(tmp_path)
    monkeypatch.chdir(module)
    monkeypatch.setenv("EDITOR", "vim")
    monkeypatch.delenv("VISUAL", raising=False)
    launched: list[Sequence[str]] = []

    def launcher(command: Sequence[str]) -> int:
        launched.append(list(command))
        return 0

    monkeypatch.setattr(CerApp, "suspend", lambda self: contextlib.nullcontext())
    options = RunOptions(impl="claims:f", timeout=10)
    app = create_app(module / "evals.toml", options, watch=False, launcher=launcher)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await settle(app)
        for name in ("named", "linked", "option"):
            assert run_screen(app).case_list.select_name(name)
            await settle(app)
            await pilot.press("E")
            await pilot.pause()
            assert launched == [], (name, launched)
        assert run_screen(app).case_list.select_name("honest")
        await settle(app)
        await pilot.press("E")
        await pilot.pause()
    assert launched == [["vim", "+24", "--", str(module / "claims.py")]]
    assert not (module / "pwned").exists()
