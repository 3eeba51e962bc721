"""``python -m cer.cli``: the ``cer`` program, through its one entry point."""

import sys

from cer.cli.entry import main

sys.exit(main())
