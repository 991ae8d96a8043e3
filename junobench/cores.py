"""How many CPU cores this process may use: the one count that parallel work is sized by
(preparing records, verifying notebooks).

>>> available_cores() >= 1
True
"""

from __future__ import annotations

import os


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the system has one, else
    every core), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)
