"""The modal screens of cer-tui: help, group-by, matrix."""
