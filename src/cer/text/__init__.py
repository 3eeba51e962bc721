"""Text made safe for each surface: the implementation's text kept, stored and shown
safely, a case's declared tables as TOML, and the implementation's part of a traceback."""
