"""Defaults of the options that say how and where notebooks run (the sandbox, the
executor, the environment, the kernels), from a configuration file and environment
variables, so that a machine's settings need not be typed on every command.

Where they come from, each overriding the one before:

1. ``junobench.toml`` in your configuration folder (``$XDG_CONFIG_HOME/junobench/``,
   default ``~/.config/junobench/``);
2. ``junobench.toml`` in the working directory, else the ``[tool.junobench]`` table of
   its ``pyproject.toml``; never a file of a snapshot: this one is left out when the
   working directory holds a snapshot (a ``benchmark_desc.xlsx``) or lies inside the
   ``--source`` folder, since a snapshot's files are untrusted (one that said
   ``sandbox = "none"`` would unconfine its own notebooks);
3. environment variables ``JUNOBENCH_<OPTION>`` (``JUNOBENCH_SANDBOX=none``,
   ``JUNOBENCH_MAX_PROCESSES=64``, ``JUNOBENCH_PASS_ENV=HF_TOKEN,WANDB_API_KEY``);
4. the command line.

Keys are the options' long names without the dashes (``sandbox = "docker"``,
``cpus-per-notebook = 2``, ``network = true``, ``pass-env = ["HF_TOKEN"]``); an unknown
key, or a value of the wrong kind, is an error naming the file (or variable) and the key.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from junobench.errors import JunoBenchError

FILE_NAME = "junobench.toml"
ENV_PREFIX = "JUNOBENCH_"
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def configurable(action: argparse.Action) -> argparse.Action:
    """Mark ``action`` as one whose default a configuration may set."""
    action.configurable = True  # type: ignore[attr-defined]
    return action


def options_of(parsers: Iterable[argparse.ArgumentParser]) -> dict[str, argparse.Action]:
    """Key (the long option without dashes) → action, of the configurable options."""
    found: dict[str, argparse.Action] = {}
    for parser in parsers:
        for action in parser._actions:
            if getattr(action, "configurable", False):
                long = next(o for o in action.option_strings if o.startswith("--"))
                found.setdefault(long[2:], action)
    return found


def configured(options: Mapping[str, argparse.Action], *, cwd: Path | None = None,
               home: Path | None = None, environ: Mapping[str, str] | None = None,
               source: str | None = None) -> dict[str, Any]:
    """The defaults the configuration files and environment variables give, by
    destination (``args.<dest>``), later sources overriding earlier ones."""
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else cwd
    values: dict[str, Any] = {}
    for path, table in _files(cwd, home, environ, source):
        values.update(read_values(table, str(path), options))
    values.update(_from_environment(environ, options))
    return {options[key].dest: value for key, value in values.items()}


def _files(cwd: Path, home: Path | None, environ: Mapping[str, str], source: str | None
           ) -> list[tuple[Path, Mapping[str, Any]]]:
    folder = home if home is not None else Path(environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    found: list[tuple[Path, Mapping[str, Any]]] = []
    user = folder / "junobench" / FILE_NAME
    if user.is_file():
        found.append((user, _read_toml(user)))
    if not _is_snapshot_place(cwd, source):
        local = cwd / FILE_NAME
        if local.is_file():
            found.append((local, _read_toml(local)))
        elif (cwd / "pyproject.toml").is_file():
            table = _read_toml(cwd / "pyproject.toml").get("tool", {}).get("junobench")
            if table is not None:
                if not isinstance(table, dict):
                    raise JunoBenchError("[tool.junobench] is not a table", file=cwd / "pyproject.toml")
                found.append((cwd / "pyproject.toml", table))
    return found


def _is_snapshot_place(cwd: Path, source: str | None) -> bool:
    """Whether the working directory is (inside) a snapshot: its configuration is data."""
    from junobench.data.layout import DESC_TABLE

    if (cwd / DESC_TABLE).exists():
        return True
    if source:
        try:
            folder = Path(source).resolve()
        except (OSError, RuntimeError):
            return False
        here = cwd.resolve()
        return folder.is_dir() and (here == folder or folder in here.parents)
    return False


def _read_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover (Python 3.10)
        import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]
    from junobench.safety.paths import read_regular

    try:
        data: dict[str, Any] = tomllib.loads(read_regular(path, limit=1 << 20).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise JunoBenchError(f"cannot read the configuration ({error})", file=path) from None
    return data


def read_values(table: Mapping[str, Any], where: str, options: Mapping[str, argparse.Action]
                ) -> dict[str, Any]:
    """The values of a configuration table, checked against ``options``."""
    out = {}
    for key, value in table.items():
        name = key.replace("_", "-")
        if name not in options:
            raise JunoBenchError(f"unknown key {key!r}", file=where,
                                 hint="keys: " + ", ".join(sorted(options)))
        out[name] = _checked(options[name], value, f"key {key!r}", where)
    return out


def _from_environment(environ: Mapping[str, str], options: Mapping[str, argparse.Action]
                      ) -> dict[str, Any]:
    out = {}
    for name, action in options.items():
        variable = ENV_PREFIX + name.upper().replace("-", "_")
        if environ.get(variable, "") != "":
            text = environ[variable]
            value: Any = [v.strip() for v in text.split(",") if v.strip()] \
                if isinstance(action, argparse._AppendAction) else text
            out[name] = _checked(action, value, variable, "the environment")
    return out


def _checked(action: argparse.Action, value: Any, key: str, where: str) -> Any:
    """``value`` as the option takes it, or an error naming ``key`` and ``where``."""
    def wrong(expected: str) -> JunoBenchError:
        return JunoBenchError(f"{key}: expected {expected}, not {value!r}", file=where)

    if action.nargs == 0:  # a switch
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if isinstance(action, argparse._AppendAction):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise wrong("a list of names")
        return list(value)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise wrong("a value")
    converted: Any = value
    if action.type in (int, float):
        try:
            converted = action.type(value)
        except (TypeError, ValueError):
            raise wrong("an integer" if action.type is int else "a number") from None
        if action.type is int and isinstance(value, float):
            raise wrong("an integer")
    elif action.type is None:
        converted = str(value)
    if action.choices is not None and converted not in action.choices:
        raise wrong("one of " + ", ".join(map(str, action.choices)))
    return converted
