"""Does the interpreter a kernel runs in meet the environment's pins?

:func:`kernel_environment` lists what a kernel target's interpreter has installed (once
per run, in a subprocess of that interpreter); :meth:`KernelEnvironment.mismatches` names
each pin a case needs that it does not meet, in words a report can show: ``pandas 3.1.1
where the benchmark pins 2.1.4``.

>>> from junobench.envs.environment import packaged
>>> found = KernelEnvironment("/usr/bin/python3", "3.11.7", packaged(), {"pandas": "3.1.1"})
>>> for line in found.mismatches(["pandas==2.1.4", "numpy==1.26.4"]):
...     print(line)
Python 3.11 where the benchmark runs 3.10
pandas 3.1.1 where the benchmark pins 2.1.4
numpy not installed where the benchmark pins 1.26.4
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from junobench.envs.environment import Environment
from junobench.envs.installer import installed_versions, interpreter_version
from junobench.envs.kernel import KernelTarget


@dataclass
class KernelEnvironment:
    """What kernels of one interpreter have: its Python version and installed
    distributions, against the environment a snapshot should run in."""

    python: str
    version: str
    environment: Environment
    installed: dict[str, str] = field(default_factory=dict)
    env_dir: str | None = None
    env_name: str | None = None

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])

    def python_mismatch(self) -> str | None:
        if self.minor == self.environment.python:
            return None
        return f"Python {self.minor} where the benchmark runs {self.environment.python}"

    def mismatches(self, requirements: Iterable[str]) -> list[str]:
        """The pins among ``requirements`` (``name==version``) this interpreter does not
        meet, the Python version first."""
        out = [m] if (m := self.python_mismatch()) else []
        for line in requirements:
            name, _, pinned = line.partition("==")
            installed = self.installed.get(name)
            if installed is None:
                out.append(f"{name} not installed where the benchmark pins {pinned}")
            elif installed != pinned:
                out.append(f"{name} {installed} where the benchmark pins {pinned}")
        return out

    def to_json(self, requirements: Iterable[str] = ()) -> dict[str, Any]:
        """What a report records: the interpreter, the environment expected, for every pin
        of it and of ``requirements`` the version installed (null: absent), and which of
        ``requirements`` (what the cases need) are ``unmet``."""
        needed = [r.partition("==")[0] for r in requirements]
        names = dict.fromkeys([*self.environment.requirements, *needed])
        pins = {name: {"pinned": self.environment.pin(name), "installed": self.installed.get(name)}
                for name in sorted(names)}
        return {
            "python": self.version,
            "executable": self.python,
            "env_dir": self.env_dir,
            "env_name": self.env_name,
            "expected": self.environment.summary(),
            "python_mismatch": self.python_mismatch(),
            "unmet": sorted(n for n in set(needed) if pins[n]["installed"] != pins[n]["pinned"]),
            "packages": pins,
        }

    def describe(self) -> str:
        """``junobench-2025 at envs/sample (Python 3.10.13)`` or ``junobench's own
        interpreter (Python 3.11.7)``."""
        where = f"{self.env_name or 'environment'} at {self.env_dir}" if self.env_dir else (
            "junobench's own interpreter")
        return f"{where} (Python {self.version})"


def kernel_environment(target: KernelTarget, environment: Environment) -> KernelEnvironment:
    """Inspect ``target``'s interpreter (a subprocess; no kernel is started)."""
    return KernelEnvironment(target.python, interpreter_version(target.python), environment,
                             installed_versions(target.python), target.env_dir, target.environment)
