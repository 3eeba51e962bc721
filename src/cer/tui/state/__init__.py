"""The UI's state: pure Python, no Textual (the rows, the session of lanes, diffing,
layouts, watch planning, formatting), so that it is tested without an app."""
