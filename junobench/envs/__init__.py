"""The benchmark's pinned environments: what each case needs, and running it there.

JunoBench's crashes were reproduced in one pinned environment (Python 3.10, ~60 pinned
libraries). :mod:`.environment` holds environments as versioned data (published pins,
Python version, a full transitive lock, where each fact came from); :mod:`.requirements`
maps a case's imports to pinned distributions (the ``requirements`` record field).
"""
