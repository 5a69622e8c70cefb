"""``python -m placement``: see :mod:`placement.cli`."""

import sys

from .cli import main

sys.exit(main())
