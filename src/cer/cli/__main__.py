"""``python -m cer.cli``: the ``cer`` program."""

import sys

from cer.cli.main import main

sys.exit(main())
