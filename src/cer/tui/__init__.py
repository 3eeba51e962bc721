"""The terminal UI, the only part of cer that imports Textual.

The app is built by :func:`cer.tui.app.create_app`. This package's own ``__init__``
imports nothing, so that its pure modules (board, diffing, details, formatting,
watching, themes) load without Textual.
"""
