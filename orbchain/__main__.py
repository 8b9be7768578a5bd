"""``python -m orbchain``: the same as the ``orbchain`` command."""

import sys

from orbchain.cli import main

sys.exit(main())
