"""``junobench env dockerfile``: a container build context that reproduces an environment.

The context holds ``Dockerfile``, ``requirements.txt`` (the selection's pins, the kernel
included), ``lock.txt`` (the environment's lock, every other distribution held to it) and
``junobench-env.json`` (the manifest ``--env`` reads). The image starts from the official
image of the environment's Python (``python:3.10-slim``), makes the environment at
``/opt/junobench-env`` with uv, registers its kernelspec, and installs junobench itself
as a uv tool on its own interpreter (junobench needs a newer Python and pandas than the
benchmark pins, so the two never share site-packages). Inside the container::

    junobench verify --source /data/snapshot --env /opt/junobench-env

>>> from junobench.selection import select
>>> text = dockerfile_text(select("sample"))
>>> text.splitlines()[3]
'FROM python:3.10-slim'
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from junobench.envs.create import (
    MANIFEST,
    REQUIREMENTS_FILE,
    Selection,
    manifest_of,
    needs_source_builds,
    selection_key,
)
from junobench.envs.environment import SPEC_FILE
from junobench.envs.installer import run, uv_binary
from junobench.envs.pins import parse_pins
from junobench.envs.sandbox import IMAGE_ENV
from junobench.envs.wheels import SOURCE_BUILDS
from junobench.errors import JunoBenchError
from junobench.safety.atomic import swapped_in
from junobench.safety.grammar import (
    check,
    is_environment_name,
    is_image_reference,
    is_iso_date,
    is_python_version,
    is_version,
)

#: Files of a build context (nothing else may be in its folder).
CONTEXT_FILES = ("Dockerfile", "requirements.txt", "lock.txt", MANIFEST)
#: The Python junobench itself runs on inside the image.
TOOL_PYTHON = "3.12"


def dockerfile_text(selection: Selection, *, junobench: str | None = None, uv: str | None = None) -> str:
    """The Dockerfile of a selection (see the module docstring). ``junobench`` is the
    junobench version the image installs from PyPI (default: this one; the build argument
    ``JUNOBENCH`` takes any requirement, e.g. a git URL); ``uv`` the uv version to install
    (default: the one here)."""
    env = selection.environment
    uv, junobench = check_values(selection, uv=uv or _uv_version(), junobench=junobench or _own_version())
    what = (f"every pin of {env.name}" if selection.whole else
            f"what {len(selection.cases)} case(s) need" if selection.cases else "the selection")
    lock = " -c lock.txt" if env.lock_file is not None else ""
    exclude = f" --exclude-newer {env.exclude_newer}" if env.exclude_newer else ""
    exclude += " --require-hashes" if env.hashed else ""
    builds = needs_source_builds(selection)
    lines = [
        f"# JunoBench reproduction environment {env.name}: {what}, at the pinned versions.",
        "# Written by `junobench env dockerfile`; build it with `docker build -t junobench-env .`",
        f"# Alternative: the published image {env.published_image}" if env.published_image else
        "# (no published image is recorded for this environment)",
        f"FROM {env.base_image}",
        "",
        *([f"# No wheel for Python {env.python} on {env.platform}: {', '.join(builds)} (built "
           "from source).",
           "RUN apt-get update && apt-get install -y --no-install-recommends build-essential \\",
           "    && rm -rf /var/lib/apt/lists/*", ""] if builds else []),
        "ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \\",
        "    UV_LINK_MODE=copy UV_TOOL_BIN_DIR=/usr/local/bin",
        f"RUN pip install uv=={uv}",
        "",
        f"# The environment: the image's Python {env.python}, the pins, the kernel.",
        f"WORKDIR {IMAGE_ENV}",
        f"COPY requirements.txt{' lock.txt' if lock else ''} {MANIFEST} ./",
        f"RUN uv venv --allow-existing --python /usr/local/bin/python{env.python} {IMAGE_ENV} \\",
        f"    && uv pip install --python {IMAGE_ENV}/bin/python -r requirements.txt{lock}{exclude} \\",
        f"    && cp requirements.txt {REQUIREMENTS_FILE} \\",
        f"    && {IMAGE_ENV}/bin/python -m ipykernel install --prefix {IMAGE_ENV} --name {_spec_name(selection)}",
        "",
        f"# junobench itself, on its own Python {TOOL_PYTHON} (it needs newer libraries than the pins).",
        f"ARG JUNOBENCH=junobench[run]=={junobench}",
        f'RUN uv tool install --python {TOOL_PYTHON} "${{JUNOBENCH}}"',
        "",
        "WORKDIR /work",
        f'CMD ["junobench", "env", "show", "{IMAGE_ENV}"]',
    ]
    return "\n".join(lines) + "\n"


def image_manifest(selection: Selection) -> dict[str, object]:
    """The manifest of the environment the image makes (read by ``--env``)."""
    env = selection.environment
    return manifest_of(selection, selection_key(selection, env.python), used=env.python,
                       executable=f"/usr/local/bin/python{env.python}", note=None,
                       kernelspec=_spec_name(selection), installer="uv (docker build)")


def write_context(out: str | Path, selection: Selection, *, junobench: str | None = None) -> Path:
    """Write the build context into ``out`` (new, empty, or a context written before; any
    other content is refused). Written beside it and moved into place."""
    out = Path(out).expanduser().absolute()
    if os.path.lexists(out):
        if out.is_symlink() or not out.is_dir():
            raise JunoBenchError("exists and is not a directory", file=out, hint="choose a new folder")
        others = sorted(p.name for p in out.iterdir() if p.name not in CONTEXT_FILES)
        if others:
            raise JunoBenchError(f"the folder holds files a build context does not ({', '.join(others[:3])})",
                                 file=out, hint="choose a new or empty folder; nothing was changed")
    with swapped_in(out, CONTEXT_FILES) as staging:  # an earlier context: what it holds goes, anything else stays
        (staging / "Dockerfile").write_text(dockerfile_text(selection, junobench=junobench), encoding="utf-8")
        (staging / "requirements.txt").write_text("\n".join(selection.requirements) + "\n", encoding="utf-8")
        if selection.environment.lock_file is not None:  # its checked pins, written again
            (staging / "lock.txt").write_text(selection.environment.lock_text, encoding="utf-8")
        (staging / MANIFEST).write_text(json.dumps(image_manifest(selection), indent=2) + "\n",
                                        encoding="utf-8")
    return out


def check_values(selection: Selection, *, uv: str, junobench: str) -> tuple[str, str]:
    """Check every value the Dockerfile takes from data against its grammar (see
    :mod:`junobench.safety.grammar`); returns ``uv`` and ``junobench``, checked."""
    env = selection.environment
    where = env.folder / SPEC_FILE
    check(env.name, is_environment_name, field="name", file=where)
    check(env.python, is_python_version, field="python", file=where)
    check(env.base_image, is_image_reference, field="base_image", file=where)
    if env.published_image is not None:
        check(env.published_image, is_image_reference, field="published_image", file=where)
    if env.exclude_newer is not None:
        check(env.exclude_newer, is_iso_date, field="exclude_newer", file=where)
    parse_pins("\n".join(selection.requirements), "the selection's requirements")
    parse_pins("\n".join(needs_source_builds(selection)), env.folder / SOURCE_BUILDS)
    return (check(uv, is_version, field="the uv version"),
            check(junobench, is_version, field="--junobench-version"))


def _spec_name(selection: Selection) -> str:
    return f"junobench-{selection_key(selection, selection.environment.python)[:8]}"


def _uv_version() -> str:
    uv = uv_binary()
    if uv is None:
        return "0.13.9"  # the version the locks were made with
    return run([uv, "--version"], what="uv").split()[1]


def _own_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("junobench")
    except PackageNotFoundError:
        return "0.1.0"
