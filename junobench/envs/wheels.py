"""Which distributions of an environment's lock have no wheel for its Python and platform.

pip and uv build such a distribution from its source archive, which may need a compiler
(fasttext 0.9.3 has no Linux wheel for CPython 3.10): ``env dockerfile`` installs build
tools into the image when the environment installs one. The answer is read from the
wheel entries of the lock in PEP 751 form (``uv pip compile -o pylock.toml``): a
distribution none of whose wheels carries a tag CPython ``python`` accepts on the
environment's platform is one. ``scripts/lock_environment.py`` writes the names to
:data:`SOURCE_BUILDS` beside the lock, so that nothing needs the network afterwards.

>>> text = '''
... [[packages]]
... name = "fasttext"
... version = "0.9.3"
... sdist = { url = "https://files.example/fasttext-0.9.3.tar.gz" }
... [[packages]]
... name = "numpy"
... version = "1.26.4"
... wheels = [{ url = "https://files.example/numpy-1.26.4-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl" }]
... '''
>>> source_builds(text, python="3.10", platform="linux x86_64")
['fasttext==0.9.3']
"""

from __future__ import annotations

from pathlib import Path

from junobench.errors import JunoBenchError

#: The file beside an environment's lock listing its source builds (one ``name==version`` a line).
SOURCE_BUILDS = "source_builds.txt"
#: The newest glibc a manylinux wheel may need on the environment's image (Debian 12's).
GLIBC_MINOR = 36


def platform_tags(python: str, platform: str) -> set[str]:
    """Every wheel tag (``py-abi-platform``) CPython ``python`` (``3.10``) accepts on
    ``platform`` (``linux x86_64``, ``linux aarch64``: glibc up to 2.:data:`GLIBC_MINOR`)."""
    from packaging import tags

    system, _, machine = platform.partition(" ")
    if system != "linux" or not machine:
        raise JunoBenchError(f"platform {platform!r} has no wheel tags here",
                             hint="use 'linux x86_64' or 'linux aarch64'")
    legacy = {5: "manylinux1", 12: "manylinux2010", 17: "manylinux2014"}
    platforms = [f"manylinux_2_{minor}_{machine}" for minor in range(GLIBC_MINOR, 4, -1)]
    platforms += [f"{legacy[m]}_{machine}" for m in sorted(legacy, reverse=True)
                  if machine == "x86_64" or m >= 17]
    platforms.append(f"linux_{machine}")
    major, minor = (int(p) for p in python.split("."))
    found = [*tags.cpython_tags((major, minor), platforms=platforms),
             *tags.compatible_tags((major, minor), "cp" + f"{major}{minor}", platforms)]
    return {str(tag) for tag in found}


def source_builds(pylock: str, *, python: str, platform: str) -> list[str]:
    """``name==version`` of each package of a PEP 751 lock (its text) that ``python`` on
    ``platform`` installs (its marker allows it) and that has no wheel for them, sorted."""
    import importlib

    from packaging.markers import InvalidMarker, Marker
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    from junobench.envs.environment import marker_environment

    try:
        tomllib = importlib.import_module("tomllib")  # Python 3.11+
    except ImportError:
        raise JunoBenchError("reading a pylock.toml needs Python 3.11 or newer") from None
    try:
        data = tomllib.loads(pylock)
    except tomllib.TOMLDecodeError as error:
        raise JunoBenchError(f"the lock is not TOML ({error})") from None
    accepted = platform_tags(python, platform)
    markers = marker_environment(python, platform)
    out = []
    for package in data.get("packages", []):
        name, version = str(package.get("name")), str(package.get("version"))
        try:
            if package.get("marker") and not Marker(str(package["marker"])).evaluate(markers):
                continue
        except InvalidMarker as error:
            raise JunoBenchError(f"{name}: bad marker ({error})") from None
        names = [str(w.get("url") or w.get("name") or "").rsplit("/", 1)[-1]
                 for w in package.get("wheels", [])]
        wheel_tags = set()
        for file_name in names:
            try:
                wheel_tags |= {str(t) for t in parse_wheel_filename(file_name)[3]}
            except InvalidWheelFilename:
                continue
        if not wheel_tags & accepted:
            out.append(f"{name}=={version}")
    return sorted(out)


def read_source_builds(folder: str | Path) -> list[str] | None:
    """The :data:`SOURCE_BUILDS` of an environment folder, or None when it has none."""
    from junobench.safety.paths import read_regular

    path = Path(folder) / SOURCE_BUILDS
    try:
        text = read_regular(path, limit=1 << 20).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise JunoBenchError(f"cannot read the list of source builds ({error})", file=path) from None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def write_source_builds(folder: str | Path, names: list[str], *, python: str, platform: str) -> Path:
    """Write :data:`SOURCE_BUILDS` into an environment folder."""
    from junobench.safety.atomic import write_bytes

    path = Path(folder) / SOURCE_BUILDS
    head = (f"# Distributions of the lock with no wheel for CPython {python} on {platform}: "
            "built from source (scripts/lock_environment.py, from uv's pylock.toml)\n")
    write_bytes(path, (head + "".join(f"{n}\n" for n in names)).encode("utf-8"))
    return path
