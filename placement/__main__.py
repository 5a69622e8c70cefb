"""``python -m placement``: see :mod:`placement.cli`.

OpenBLAS starts one thread per core when numpy is imported (tens of milliseconds of CPU on a many-core host),
and nothing the command line runs gains from a parallel BLAS: its linear algebra is matrix-vector products of
the multidimensional planner's stage tables (``placement/multidim/stages.py``), memory-bound. So the command line
asks for a single BLAS thread before anything imports numpy, unless the user set a count
(``OPENBLAS_NUM_THREADS``); the library itself (``import placement``) leaves the environment alone.
"""

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .cli import main  # noqa: E402 - after the BLAS thread count, which numpy reads when it is imported

sys.exit(main())
