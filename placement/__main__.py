"""``python -m placement``: see :mod:`placement.cli`.

OpenBLAS starts one thread per core when numpy is imported (tens of milliseconds of CPU on a many-core host),
and nothing the command line runs gains from a parallel BLAS: its linear algebra is matrix-vector products of
the multidimensional planner's stage tables (``placement/multidim/stages.py``), memory-bound. So the command line
asks for a single BLAS thread before anything imports numpy, unless the user set a count
(``OPENBLAS_NUM_THREADS``); the library itself (``import placement``) leaves the environment alone.

After a command that returned normally the process ends with :func:`os._exit`, once the ``atexit`` handlers
have run and stdout and stderr are flushed: the interpreter's own teardown (freeing every module, numpy's
included) costs about 15 ms of CPU, as much as a small multidimensional solve, and frees nothing the operating
system would not. Invariant: it is skipped only where nothing else needs it, i.e. no other thread runs and
:mod:`multiprocessing` was never imported (no child process or pool to join); the command line writes no file
of its own (only stdout and stderr). A command that raised (``SystemExit`` from argparse included) exits the
ordinary way.
"""

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .cli import main  # noqa: E402 - after the BLAS thread count, which numpy reads when it is imported


def _exit_quickly(status: int) -> None:
    """End the process with ``status`` without the interpreter's teardown, where nothing needs it (see above)."""
    import atexit  # noqa: PLC0415
    import threading  # noqa: PLC0415

    if threading.active_count() > 1 or "multiprocessing" in sys.modules:
        return
    try:
        atexit._run_exitfuncs()  # what an ordinary exit runs first (logging's flush, weakref finalizers)
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # (None where the command runs with it closed)
                stream.flush()
    except (OSError, ValueError):
        return  # a closed pipe or stream: the ordinary exit reports or ignores it as before
    os._exit(status)


status = main()
_exit_quickly(status)
sys.exit(status)
