"""The terminal UI: the only part of cer that imports Textual."""

from __future__ import annotations

from cer.tui.app import CerApp, create_app

__all__ = ["CerApp", "create_app"]
