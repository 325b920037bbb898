"""Ending a child's whole process group (its compile workers, a script's own processes) at once: the launcher's
timeout and stop, a fork server's stop, the script discovery's time limit. A group already gone, or not ours to
signal, is left alone."""

from __future__ import annotations

import os
import signal


def kill_group(pgid: int, signal_number: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pgid, signal_number)
    except (ProcessLookupError, PermissionError):
        pass
