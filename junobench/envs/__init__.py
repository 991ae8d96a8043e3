"""The benchmark's pinned environments: what each case needs, and running it there.

JunoBench's crashes were reproduced in one pinned environment (Python 3.10, ~60 pinned
libraries). :mod:`.environment` holds environments as versioned data (published pins,
Python version, a full transitive lock, where each fact came from; a snapshot may carry
its own); :mod:`.requirements` maps a case's imports to pinned distributions (the
``requirements`` record field); :mod:`.create` makes a virtual environment with what
selected cases need (uv, else pip; :mod:`.installer` runs the tools); :mod:`.kernel` is
the one place that starts a kernel in an environment's interpreter; :mod:`.check` names
the pins an interpreter does not meet; :mod:`.dockerfile` writes a container build
context. Nothing here imports the package at import time, so ``data`` can use the first
two without a cycle.
"""
