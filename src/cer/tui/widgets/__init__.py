"""The widgets of the cer-tui screen, one per module."""
