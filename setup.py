"""Build hook: the library-cause estimator, junobench's one CPU-bound hot path, is also
compiled with mypyc where a C compiler is at hand (about 1.4x its pure-Python speed; see
docs/performance.md). The compiled copy is ``junobench.construct._library_cause_c``,
built from ``library_cause.py`` with that file's digest inside, so that an edited source
is never shadowed by a stale build: ``library_cause`` uses the copy only when the digests
agree. Without a compiler, or with ``JUNOBENCH_PURE_PYTHON=1``, junobench is pure Python
and gives the same answers."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

SOURCE = Path("junobench/construct/library_cause.py")
COPY = SOURCE.with_name("_library_cause_c.py")
#: Where the part of the module that is compiled ends.
MARKER = "# ----------------------------------------------------------------- the compiled copy"


class OptionalBuildExt(build_ext):
    """An extension that fails to build is left out, with a warning: the pure-Python
    module does the same work."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # no compiler, no headers: stay pure Python
            _warn(error)

    def build_extension(self, ext: Any) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:
            _warn(error)


def _warn(error: BaseException) -> None:
    print(f"junobench: building the compiled library-cause estimator failed ({error}); "
          "installing the pure-Python one", file=sys.stderr)


#: Commands that only read the project's metadata: the module is not compiled for them
#: (pip runs this file for its metadata before it builds).
METADATA_ONLY = {"egg_info", "dist_info", "sdist"}


def extensions() -> list[Any]:
    if os.environ.get("JUNOBENCH_PURE_PYTHON") == "1" or METADATA_ONLY & set(sys.argv[1:]):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        return []
    text = SOURCE.read_text(encoding="utf-8")
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    COPY.write_text(text[:text.index(MARKER)] + f"\nSOURCE_DIGEST = {digest!r}\n", encoding="utf-8")
    try:
        return mypycify(["--ignore-missing-imports", "--follow-imports=silent", str(COPY)], opt_level="3")
    except BaseException as error:  # mypyc refused the module: stay pure Python
        _warn(error)
        return []


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
