"""Input-dataset licences: the names sources give them, their SPDX ids, and a licence policy.

Kaggle and other sources name a licence in words ("CC0: Public Domain", "Attribution 4.0
International (CC BY 4.0)", "Apache 2.0"); :func:`lookup` maps such a name to a
:class:`Licence` (SPDX id, URL, whether it is an open licence). A :class:`LicencePolicy`
is an allow-list: ``validate`` reports every dataset whose licence is outside it, and every
dataset whose licence is unknown ("Unknown", "Other (specified in description)", …).
The default list, :data:`OPEN_LICENCES`, holds the open licences below (those that allow
reuse and redistribution for any purpose).

>>> lookup("Attribution 4.0 International (CC BY 4.0)").spdx
'CC-BY-4.0'
>>> policy = LicencePolicy.default()
>>> policy.verdict("CC0: Public Domain"), policy.verdict("Unknown"), policy.verdict("CC BY-NC-SA 4.0")
('allowed', 'unknown', 'not allowed')
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from junobench.errors import JunoBenchError
from junobench.safety.paths import read_regular


@dataclass(frozen=True)
class Licence:
    """A licence: its SPDX id (or a LicenseRef- id), URL, and whether it is open."""

    spdx: str
    url: str
    open: bool
    names: tuple[str, ...] = ()


def _l(spdx: str, url: str, is_open: bool, *names: str) -> Licence:
    return Licence(spdx, url, is_open, names)


_CC = "https://creativecommons.org/licenses"
#: Licences as their sources name them (Kaggle's names among them).
LICENCES: tuple[Licence, ...] = (
    _l("CC0-1.0", "https://creativecommons.org/publicdomain/zero/1.0/", True,
       "CC0: Public Domain", "CC0 1.0", "CC0", "Public Domain", "CC0 1.0 Universal"),
    _l("CC-BY-4.0", f"{_CC}/by/4.0/", True, "Attribution 4.0 International (CC BY 4.0)", "CC BY 4.0"),
    _l("CC-BY-3.0", f"{_CC}/by/3.0/", True, "Attribution 3.0 Unported (CC BY 3.0)", "CC BY 3.0"),
    _l("CC-BY-SA-4.0", f"{_CC}/by-sa/4.0/", True,
       "Attribution-ShareAlike 4.0 International (CC BY-SA 4.0)", "CC BY-SA 4.0"),
    _l("CC-BY-SA-3.0", f"{_CC}/by-sa/3.0/", True,
       "Attribution-ShareAlike 3.0 Unported (CC BY-SA 3.0)", "CC BY-SA 3.0"),
    _l("CC-BY-NC-4.0", f"{_CC}/by-nc/4.0/", False,
       "Attribution-NonCommercial 4.0 International (CC BY-NC 4.0)", "CC BY-NC 4.0"),
    _l("CC-BY-NC-SA-4.0", f"{_CC}/by-nc-sa/4.0/", False,
       "Attribution-NonCommercial-ShareAlike 4.0 International (CC BY-NC-SA 4.0)", "CC BY-NC-SA 4.0"),
    _l("CC-BY-NC-SA-3.0", f"{_CC}/by-nc-sa/3.0/", False, "CC BY-NC-SA 3.0"),
    _l("CC-BY-ND-4.0", f"{_CC}/by-nd/4.0/", False, "CC BY-ND 4.0"),
    _l("ODbL-1.0", "https://opendatacommons.org/licenses/odbl/1-0/", True,
       "Open Database License (ODbL)", "ODbL", "ODC Open Database License (ODbL)", "ODbL 1.0"),
    _l("LicenseRef-DbCL-1.0", "https://opendatacommons.org/licenses/dbcl/1-0/", True,
       "Database: Open Database, Contents: Database Contents (DbCL)", "Database Contents License (DbCL) v1.0",
       "DbCL", "DbCL v1.0"),
    _l("PDDL-1.0", "https://opendatacommons.org/licenses/pddl/1-0/", True,
       "Open Data Commons Public Domain Dedication and License (PDDL)", "PDDL"),
    _l("ODC-By-1.0", "https://opendatacommons.org/licenses/by/1-0/", True,
       "Open Data Commons Attribution License (ODC-By)", "ODC-By", "ODC Attribution License (ODC-By)"),
    _l("CDLA-Permissive-1.0", "https://cdla.dev/permissive-1-0/", True, "CDLA Permissive 1.0",
       "Community Data License Agreement - Permissive - Version 1.0"),
    _l("CDLA-Sharing-1.0", "https://cdla.dev/sharing-1-0/", True, "CDLA Sharing 1.0",
       "Community Data License Agreement - Sharing - Version 1.0"),
    _l("MIT", "https://opensource.org/license/mit", True, "MIT License"),
    _l("Apache-2.0", "https://www.apache.org/licenses/LICENSE-2.0", True, "Apache 2.0", "Apache License 2.0",
       "Apache License, Version 2.0"),
    _l("BSD-3-Clause", "https://opensource.org/license/bsd-3-clause", True, "BSD 3-Clause", "BSD-3",
       "BSD 3-Clause License"),
    _l("BSD-2-Clause", "https://opensource.org/license/bsd-2-clause", True, "BSD 2-Clause"),
    _l("GPL-2.0", "https://www.gnu.org/licenses/old-licenses/gpl-2.0.html", True, "GPL 2", "GPL-2.0", "GPLv2",
       "GNU General Public License 2.0"),
    _l("GPL-3.0", "https://www.gnu.org/licenses/gpl-3.0.html", True, "GPL 3", "GPLv3",
       "GNU General Public License 3.0", "GNU Affero General Public License 3.0"),
    _l("LGPL-3.0", "https://www.gnu.org/licenses/lgpl-3.0.html", True,
       "GNU Lesser General Public License 3.0", "LGPL 3", "LGPLv3"),
)

#: Names that state no licence: the data's terms are not known.
UNKNOWN_NAMES: frozenset[str] = frozenset({
    "unknown", "other", "other (specified in description)", "other (specified above)", "not specified",
    "none", "n/a", "na", "no licence", "no license", "see description",
})


def normalise(name: str) -> str:
    """A licence name compared without case, surrounding space or repeated spaces."""
    return re.sub(r"\s+", " ", name).strip().casefold()


_BY_NAME: dict[str, Licence] = {}
for _licence in LICENCES:
    for _name in (_licence.spdx, *_licence.names):
        _BY_NAME[normalise(_name)] = _licence


def lookup(name: str | None) -> Licence | None:
    """The known licence ``name`` names (by SPDX id or one of its names), else None."""
    return _BY_NAME.get(normalise(name)) if name else None


def is_unknown(name: str | None) -> bool:
    """Whether ``name`` states no licence (empty, "Unknown", "Other (specified in description)" …)."""
    return not name or not name.strip() or normalise(name) in UNKNOWN_NAMES


def key(name: str) -> str:
    """What two names of the same licence share: its SPDX id when known, else the name."""
    found = lookup(name)
    return found.spdx if found is not None else normalise(name)


#: The default allow-list: every open licence of :data:`LICENCES`.
OPEN_LICENCES: tuple[str, ...] = tuple(lic.spdx for lic in LICENCES if lic.open)
#: What validate and export do with a licence outside the allow-list or unknown: a warning
#: (default), a problem (validate) or a refusal (export), or nothing.
POLICY_MODES = ("warn", "error", "off")


def check_policy_mode(mode: str) -> None:
    """Refuse a ``mode`` that is not one of :data:`POLICY_MODES`."""
    if mode not in POLICY_MODES:
        raise JunoBenchError(f"unknown licence policy {mode!r}", hint=f"use one of {', '.join(POLICY_MODES)}")


@dataclass(frozen=True)
class LicencePolicy:
    """An allow-list of licences (SPDX ids or names, compared by :func:`key`)."""

    allowed: frozenset[str]

    @classmethod
    def default(cls) -> LicencePolicy:
        return cls(frozenset(OPEN_LICENCES))

    @classmethod
    def of(cls, names: Iterable[str], *, extra: Iterable[str] = ()) -> LicencePolicy:
        """A policy allowing ``names`` and ``extra`` (each an SPDX id or a licence name)."""
        return cls(frozenset(key(n) for n in (*names, *extra) if n.strip()))

    @classmethod
    def from_options(cls, allow: Iterable[str] = (), file: str | Path | None = None) -> LicencePolicy:
        """The default list, or the list in ``file`` (one licence a line, ``#`` comments),
        plus every licence of ``allow``."""
        names = read_licence_list(file) if file is not None else list(OPEN_LICENCES)
        return cls.of(names, extra=allow)

    def verdict(self, name: str | None) -> str:
        """``allowed``, ``unknown`` (no licence stated) or ``not allowed``."""
        if is_unknown(name):
            return "unknown"
        assert name is not None
        return "allowed" if key(name) in self.allowed else "not allowed"


def read_licence_list(path: str | Path) -> list[str]:
    """The licences of an allow-list file: one a line; blank lines and ``#`` comments skipped."""
    path = Path(path)
    try:
        text = read_regular(path, limit=1 << 20).decode("utf-8")
    except OSError as error:
        raise JunoBenchError(f"cannot read the licence list ({error.strerror or error})", file=path,
                             hint="one licence (SPDX id or name) a line") from None
    except UnicodeDecodeError:
        raise JunoBenchError("the licence list is not UTF-8 text", file=path,
                             hint="one licence (SPDX id or name) a line") from None
    names = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [n for n in names if n]
