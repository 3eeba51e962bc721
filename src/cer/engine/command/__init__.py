"""The backend for implementations that are commands (``--impl-cmd``,
``--impl-cmd-per-case``): the wire protocol of docs/protocol.md and the processes that
speak it."""
