"""How both runtime-information styles look at a kernel's objects without touching the
notebook's state: a library counts only when the notebook imported it (found in
``sys.modules``, never imported here), and what the inspection itself imported is
reported. Standard library only: :mod:`junobench.runtime.extract` sends this module's
source into the kernel ahead of the style module's (:func:`kernel_source`), which
imports it in-process as any module.

>>> import collections
>>> loaded("collections", "no_such_module_here") == [collections, None]
True
>>> is_a(collections.OrderedDict(), "collections", "OrderedDict"), is_a(1, "collections", "OrderedDict")
(True, False)
>>> mro(True)[:2]
[('builtins', 'bool'), ('builtins', 'int')]
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterable
from typing import Any

#: The lines of a style module dropped from its kernel source, which carries the probes'
#: source ahead of it: its import of them, and its ``__future__`` import (that of the
#: probes, first in the text, stands for both).
_DROPPED = re.compile(r"^(?:from junobench\.runtime\.probes import .*|from __future__ import annotations)$",
                      re.MULTILINE)


def loaded(*modules: str) -> list[types.ModuleType | None]:
    """Modules from ``sys.modules`` (None for those not imported): never imports."""
    return [sys.modules.get(name) for name in modules]


def is_a(obj: Any, module: str, name: str) -> bool:
    """Whether ``obj`` is an instance of the class ``name`` of ``module``, when the notebook
    imported that module (False otherwise: a class never imported has no instances)."""
    cls = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and isinstance(obj, cls)


def any_loaded(modules: Iterable[str]) -> bool:
    """Whether the notebook imported any of ``modules``."""
    return any(name in sys.modules for name in modules)


def mro(obj: Any) -> list[tuple[str, str]]:
    """``(module, name)`` of each class of ``obj``'s type, most derived first: a class is
    recognised by its names without importing its library."""
    return [(getattr(c, "__module__", "") or "", c.__name__) for c in type(obj).__mro__]


def top_modules() -> set[str]:
    """The top-level packages now in ``sys.modules`` (compared before and after an
    inspection: what it imported)."""
    return {name.partition(".")[0] for name in list(sys.modules)}


def kernel_source(probes: str, module: str) -> str:
    """The source a kernel executes for a style module: these probes, then ``module``
    without the line that imports them (the kernel has no junobench to import)."""
    return probes + "\n" + _DROPPED.sub("", module)
