"""SIGTERM stopping a batch run as Ctrl-C does, for the command line and the Python API alike.

A job scheduler, ``docker stop`` or ``kill`` sends SIGTERM, whose default action ends the process on the spot: a
torn last line, parquet output without its footer, part files left behind. While a run lasts, SIGTERM raises
:class:`Terminated` where the run is instead, so it tidies up as after Ctrl-C, but only where that is safe to
decide for the caller: in the main thread (the only one that can set handlers), when SIGTERM has its default
action. A handler of the program's own (or SIGTERM ignored) is left alone.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Terminated", "terminate_as_interrupt"]


class Terminated(KeyboardInterrupt):
    """A batch run stopped by SIGTERM. Raised where the run was, once it has stopped as on Ctrl-C: the output
    holds complete rows only (parquet: with its footer), the worker processes are stopped, the part files removed,
    and ``resume=True`` carries on. A ``KeyboardInterrupt``, so ``except Exception`` does not catch it. Uncaught,
    it ends the program with a traceback and exit status 1; catch it to exit otherwise (the command line exits
    with 143, as a process killed by SIGTERM reports)."""


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` inside the ``with`` block (see the module docstring); a second SIGTERM
    while the run tidies up is ignored, so the tidying-up finishes (SIGKILL still kills). The default action is
    back after the block."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated("SIGTERM: the batch run stopped; its output holds complete rows only (resume to carry on)")

    try:
        signal.signal(signal.SIGTERM, stop)  # in the try: a SIGTERM just after it still gets the default put back
        yield
    finally:
        # unless the run installed a handler of its own meanwhile (``ray.init`` does: the run then ends as it says)
        if signal.getsignal(signal.SIGTERM) in (stop, signal.SIG_IGN):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
