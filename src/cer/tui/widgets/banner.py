"""The banner over the list: a suite that stopped parsing, an implementation that failed
to import or a command that could not start, a runner that crashed. Hidden when all is
well."""

from __future__ import annotations

from typing import Literal, get_args

from rich.text import Text
from textual.widgets import Static

BannerKind = Literal["suite-error", "import-error", "run-error"]
"""What went wrong: the suite does not load, an implementation does not (a module that
does not import, a command that does not start), the runner crashed."""
BANNER_KINDS: tuple[BannerKind, ...] = get_args(BannerKind)


class Banner(Static):
    """An error with a title and its details, styled by kind (``-suite-error``...)."""

    DEFAULT_CSS = """
    Banner {
        display: none;
        height: auto;
        max-height: 14;
        overflow-y: auto;
    }
    Banner.-shown {
        display: block;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.kind: BannerKind | None = None
        self.body = ""

    def show_error(self, kind: BannerKind, title: str, body: str) -> None:
        """Show an error of ``kind`` (one of :data:`BANNER_KINDS`)."""
        for known in BANNER_KINDS:
            self.set_class(known == kind, f"-{known}")
        self.kind = kind
        self.body = body
        text = Text()
        text.append(title, "bold")
        if body.strip():  # the evidence under the cause, never the cause again
            text.append("\n")
            text.append(body.rstrip("\n"))
        self.update(text)
        self.add_class("-shown")

    def clear(self) -> None:
        """Hide the banner."""
        if self.kind is None:
            return
        self.kind = None
        self.body = ""
        self.remove_class("-shown", *(f"-{known}" for known in BANNER_KINDS))
        self.update("")
