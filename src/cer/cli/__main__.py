"""``python -m cer.cli``: the ``cer`` program."""

import sys

from cer.cli.commands import main

sys.exit(main())
