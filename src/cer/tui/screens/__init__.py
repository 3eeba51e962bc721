"""The screens of cer-tui: the main view (:mod:`.run`) and the screens over it (help,
group-by, matrix, drafts)."""
