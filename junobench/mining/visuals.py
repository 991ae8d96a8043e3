"""A visual output of a notebook cell, decoded and checked: its image, or why there is none.

A ``display_data`` or ``execute_result`` output holds one visual when one of its MIME types
is a picture or a chart specification; :func:`visual_of` picks it (raster first: PNG, JPEG,
GIF, WebP; then SVG; then Plotly, Vega-Lite, Vega and Bokeh specifications) and decodes it.
What a notebook holds is untrusted, so every step is bounded and every failure is a
:class:`Visual` with a ``problem`` (never an exception):

- base64 that does not decode (``malformed base64``);
- more than ``max_bytes`` of data (``over the … bound``), refused before it is decoded;
- a raster image whose header gives more than ``max_pixels`` pixels (a decompression
  bomb), read from its header before any pixel is decoded; data that is not the image its
  MIME type says, or a PNG whose chunks fail their checksums;
- an SVG with a script, an event handler, ``foreignObject``, a document type (entities) or a
  reference to anything outside itself: refused unread and not kept; a safe SVG is
  rasterised to PNG with resvg (the ``mine`` extra, ``resvg-py``) at its own size, scaled
  down to the pixel bound, and kept as text too (``text``); without resvg it is kept as text
  only;
- any other image type (``image/tiff``…): not supported.

>>> import base64
>>> visual_of({"image/png": b'"' + base64.b64encode(b"not a png") + b'"'}).problem
'image/png: the data is not an image (cannot identify image file)'
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import re
import struct
import warnings
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

import msgspec

from junobench.safety.text import first_line

#: Raster image types kept as they are (the ``datasets.Image`` feature stores their bytes).
RASTER: dict[str, str] = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WEBP"}
SVG = "image/svg+xml"
#: Chart specifications kept as JSON text (the prefixes of their MIME types).
SPECS: tuple[str, ...] = ("application/vnd.plotly.v1+json", "application/vnd.vegalite.", "application/vnd.vega.",
                          "application/vnd.bokehjs_exec.")
#: Non-visual MIME types a notebook output may hold (any other is reported as unknown).
TEXTUAL: frozenset[str] = frozenset({
    "text/plain", "text/html", "text/markdown", "text/latex", "text/javascript", "application/javascript",
    "application/json", "application/vnd.jupyter.widget-view+json", "application/vnd.jupyter.widget-state+json",
    "application/vnd.bokehjs_load.v0+json", "application/vnd.holoviews_load.v0+json",
    "application/vnd.holoviews_exec.v0+json", "application/vnd.dataresource+json", "application/pdf",
    "application/x-tex", "text/x-python", "application/vnd.code.notebook.error",
})

#: Default bounds: data of one output, and pixels of one image (Pillow's own default is 89.5 M).
MAX_OUTPUT_BYTES = 32 << 20
MAX_PIXELS = 50_000_000
#: Longest side of a rasterised SVG.
MAX_SVG_SIDE = 4096

_text = msgspec.json.Decoder(str | list[str]).decode


@dataclass(frozen=True)
class Visual:
    """One visual output: ``image`` (PNG/JPEG/GIF/WebP bytes) and its size, or ``text`` (an
    SVG's markup, a specification's JSON), or a ``problem`` saying why neither is kept."""

    mime: str
    image: bytes | None = None
    width: int | None = None
    height: int | None = None
    text: str | None = None
    size: int = 0  # bytes of the output's decoded data
    problem: str | None = None


def is_visual(mime: str) -> bool:
    """Whether a MIME type holds a picture or a chart specification."""
    return mime.startswith("image/") or mime.startswith(SPECS)


def visual_mime(mimes: list[str]) -> str | None:
    """The MIME type of an output's visual, in order of preference (None: no visual)."""
    for wanted in (*RASTER, SVG):
        if wanted in mimes:
            return wanted
    for prefix in SPECS:
        found = next((m for m in mimes if m.startswith(prefix)), None)
        if found is not None:
            return found
    return next((m for m in mimes if m.startswith("image/")), None)


def visual_of(data: Mapping[str, bytes], *, max_bytes: int = MAX_OUTPUT_BYTES,
              max_pixels: int = MAX_PIXELS) -> Visual | None:
    """The visual of an output whose ``data`` maps MIME types to their raw JSON values, or
    None when it holds none."""
    mime = visual_mime(list(data))
    if mime is None:
        return None
    raw = data[mime]
    if len(raw) > max_bytes + 2:  # the JSON quotes
        return Visual(mime, size=len(raw), problem=f"{mime}: {_size(len(raw))} of data, over the "
                                                   f"{_size(max_bytes)} bound: not read")
    if mime in RASTER:
        return _raster(mime, raw, max_pixels)
    if mime == SVG:
        return _svg(raw, max_pixels)
    if mime.startswith("image/"):
        return Visual(mime, size=len(raw), problem=f"{mime}: an image type junobench does not read "
                                                   "(PNG, JPEG, GIF, WebP and SVG are)")
    try:
        value = msgspec.json.decode(raw)
        if isinstance(value, str):  # a specification saved as a JSON string of JSON
            value, raw = msgspec.json.decode(value), value.encode("utf-8")
        if not isinstance(value, dict | list):
            raise ValueError("not a JSON object")
        text = bytes(raw).decode("utf-8")
    except (UnicodeDecodeError, ValueError, msgspec.DecodeError) as error:
        return Visual(mime, size=len(raw), problem=f"{mime}: the specification is not JSON ({first_line(error, 120)})")
    return Visual(mime, text=text, size=len(raw))


def _raster(mime: str, raw: bytes, max_pixels: int) -> Visual:
    data, problem = decode_base64(raw)
    if data is None:
        return Visual(mime, size=len(raw), problem=f"{mime}: {problem}")
    size, fmt = image_size(data, max_pixels)
    if isinstance(size, str):
        return Visual(mime, size=len(data), problem=f"{mime}: {size}")
    if fmt != RASTER[mime]:
        return Visual(mime, size=len(data), problem=f"{mime}: the data is a {fmt} image, not what its MIME "
                                                    "type says")
    return Visual(mime, image=data, width=size[0], height=size[1], size=len(data))


def decode_base64(raw: bytes) -> tuple[bytes | None, str | None]:
    """The bytes of a JSON string (or list of strings) of base64, or why it does not decode.
    Line breaks are allowed (notebooks save base64 wrapped over lines); anything else that is
    not base64 is malformed."""
    if raw[:1] == b'"' and raw[-1:] == b'"':
        # a JSON string without escapes but, maybe, the one that ends it (a line break): no
        # decoding needed. A backslash is outside the alphabet: only when the strict decoding
        # fails is the string searched for one (then it is decoded as JSON).
        end = len(raw) - (3 if raw[-3:-2] == b"\\" else 1)
        try:
            return _strict_base64(memoryview(raw)[1:end]), None
        except (binascii.Error, ValueError) as error:
            if raw.find(b"\\", 1, end) < 0:
                return None, f"malformed base64 ({first_line(error, 120)})"
    try:
        value = _text(raw)
    except (msgspec.DecodeError, ValueError) as error:
        return None, f"the data is not a JSON string ({first_line(error, 120)})"
    text = value if isinstance(value, str) else "".join(value)
    payload = _WHITESPACE.sub("", text).encode("ascii", "replace")
    try:
        return _strict_base64(payload), None
    except (binascii.Error, ValueError) as error:
        return None, f"malformed base64 ({first_line(error, 120)})"


_WHITESPACE = re.compile(r"[\r\n]+")


def _strict_base64(data: bytes | memoryview) -> bytes:
    """Base64 decoded, refusing any character outside the alphabet (in C where Python can)."""
    try:
        decoded: bytes = binascii.a2b_base64(data, strict_mode=True)  # type: ignore[call-arg,unused-ignore]
        return decoded
    except TypeError:  # Python 3.10: no strict mode
        return base64.b64decode(data, validate=True)


_PNG = b"\x89PNG\r\n\x1a\n"


def image_size(data: bytes, max_pixels: int) -> tuple[tuple[int, int] | str, str | None]:
    """``((width, height), format)`` read from an image's header (no pixel decoded), or a
    problem: not an image, over ``max_pixels``, a PNG cut short or whose chunks fail their
    checksums. PNGs are read here (their chunks walked, each checksum computed); other
    formats by Pillow, which reads their headers only."""
    if data.startswith(_PNG):
        return _png_size(data, max_pixels)
    from PIL import Image

    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            image = Image.open(io.BytesIO(data))
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
            return f"a decompression bomb ({first_line(error, 120)})", None
        except Exception as error:  # Pillow raises many types for data it cannot read
            return f"the data is not an image ({first_line(error, 120).split(' <', 1)[0]})", None
    width, height = image.size
    if width * height > max_pixels:
        return _over(width, height, max_pixels), image.format
    return (width, height), image.format


def _png_size(data: bytes, max_pixels: int) -> tuple[tuple[int, int] | str, str | None]:
    position, size, seen_end = 8, None, False
    view = memoryview(data)
    while position + 12 <= len(data):
        length, = struct.unpack_from(">I", data, position)
        end = position + 12 + length
        if end > len(data):
            return "a damaged PNG image (a chunk is cut short)", "PNG"
        kind = data[position + 4:position + 8]
        if zlib.crc32(view[position + 4:end - 4]) != struct.unpack_from(">I", data, end - 4)[0]:
            return f"a damaged PNG image (the checksum of a {kind.decode('latin-1')!r} chunk fails)", "PNG"
        if kind == b"IHDR" and size is None and length >= 8:
            width, height = struct.unpack_from(">II", data, position + 8)
            size = (width, height)
            if width * height > max_pixels:
                return _over(width, height, max_pixels), "PNG"
        if kind == b"IEND":
            seen_end = True
            break
        position = end
    if size is None or not seen_end or 0 in size:
        return "a damaged PNG image (no header, or no end)", "PNG"
    return (size[0], size[1]), "PNG"


def _over(width: int, height: int, max_pixels: int) -> str:
    return (f"{width}×{height} pixels, over the bound of {max_pixels:,} (a decompression bomb, or an image "
            "too large to keep)")


# --------------------------------------------------------------------------- SVG

#: What makes an SVG unsafe to keep or draw (checked on its parsed elements).
_SVG_FORBIDDEN = frozenset({"script", "foreignObject", "iframe", "embed", "object", "handler", "listener"})
_LENGTH = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(px|pt|pc|in|cm|mm)?\s*$")
_UNITS = {None: 1.0, "px": 1.0, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54, "mm": 9.6 / 2.54}


def _svg(raw: bytes, max_pixels: int) -> Visual:
    try:
        value = _text(raw)
    except (msgspec.DecodeError, ValueError) as error:
        return Visual(SVG, size=len(raw), problem=f"{SVG}: the data is not a JSON string ({first_line(error, 120)})")
    text = value if isinstance(value, str) else "".join(value)
    problem, size = svg_check(text)
    if problem is not None:
        return Visual(SVG, size=len(text), problem=f"{SVG}: {problem}: not kept")
    try:
        import resvg_py
    except ImportError:
        return Visual(SVG, text=text, size=len(text))
    width, height = _fit(size, max_pixels)
    try:
        png = resvg_py.svg_to_bytes(svg_string=_in_pixels(text, size), width=width, height=height)
    except (ValueError, RuntimeError, OverflowError) as error:
        return Visual(SVG, text=text, size=len(text), problem=f"{SVG}: cannot be drawn ({first_line(error, 120)})")
    drawn, _ = image_size(bytes(png), max_pixels)
    if isinstance(drawn, str):
        return Visual(SVG, text=text, size=len(text), problem=f"{SVG}: drawn as {drawn}")
    return Visual(SVG, image=bytes(png), width=drawn[0], height=drawn[1], text=text, size=len(text))


def svg_check(text: str) -> tuple[str | None, tuple[float, float] | None]:
    """Why an SVG is unsafe or unreadable (None when it is neither) and its own size in
    pixels (width and height, or its view box; None when it gives neither)."""
    import xml.etree.ElementTree as ElementTree

    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        return "it declares a document type (entities are not expanded)", None
    try:
        root = ElementTree.fromstring(text)
    except (ElementTree.ParseError, ValueError, RecursionError) as error:
        return f"not well-formed XML ({first_line(error, 120)})", None
    if _local(root.tag) != "svg":
        return f"its root element is <{_local(root.tag)}>, not <svg>", None
    for element in root.iter():
        tag = _local(element.tag)
        if tag in _SVG_FORBIDDEN:
            return f"it holds a <{tag}> element (script or foreign content)", None
        for name, value in element.attrib.items():
            attribute = _local(name).lower()
            if attribute.startswith("on"):
                return f"it holds an event handler ({_local(name)})", None
            if attribute == "href" and not value.startswith(("#", "data:image/png", "data:image/jpeg")):
                return f"it refers to something outside itself ({value[:60]!r})", None
            if "javascript:" in value.replace(" ", "").lower() or "url(http" in value.replace(" ", "").lower():
                return f"an attribute refers to a script or a remote resource ({_local(name)})", None
        if tag == "style" and element.text and ("@import" in element.text or "url(" in element.text):
            return "its style sheet imports or refers to a resource", None
    return None, _svg_size(root)


_ROOT = re.compile(r"<svg\b[^>]*>")
_SIZE_ATTRIBUTE = re.compile(r"""(\s(width|height)\s*=\s*)(["'])[^"']*\3""")


def _in_pixels(text: str, size: tuple[float, float] | None) -> str:
    """The SVG with its root's width and height in pixels (the same size: resvg refuses the
    point sizes Matplotlib writes, ``width="460.8pt"``)."""
    match = _ROOT.search(text)
    if match is None or size is None:
        return text
    values = {"width": f"{size[0]:g}", "height": f"{size[1]:g}"}
    tag = _SIZE_ATTRIBUTE.sub(lambda m: f'{m.group(1)}"{values[m.group(2)]}"', match.group(0), count=2)
    return text[:match.start()] + tag + text[match.end():]


def _local(tag: object) -> str:
    return str(tag).rsplit("}", 1)[-1]


def _svg_size(root: object) -> tuple[float, float] | None:
    attributes = getattr(root, "attrib", {})
    width, height = (_length(attributes.get(k)) for k in ("width", "height"))
    if width and height:
        return width, height
    box = str(attributes.get("viewBox") or "").replace(",", " ").split()
    try:
        sides = (float(box[2]), float(box[3])) if len(box) == 4 else None
    except ValueError:
        return None
    return sides if sides is not None and all(map(_drawable, sides)) else None


def _length(value: object) -> float | None:
    match = _LENGTH.match(str(value)) if value is not None else None
    if match is None:
        return None
    length = float(match.group(1)) * _UNITS[match.group(2)]
    return length if _drawable(length) else None


def _drawable(length: float) -> bool:
    """Whether ``length`` is a side an image can have: finite, and at least a millionth
    of a pixel (``1e999``, ``inf``, ``nan`` and ``1e-300`` are not: left to resvg's default).

    >>> [_drawable(x) for x in (460.8, float("inf"), float("nan"), 1e-300, 0.0)]
    [True, False, False, False, False]
    """
    return math.isfinite(length) and length >= 1e-6


def _fit(size: tuple[float, float] | None, max_pixels: int) -> tuple[int | None, int | None]:
    """The pixel size to draw an SVG of ``size`` at: its own, scaled down to fit both
    :data:`MAX_SVG_SIDE` and ``max_pixels`` (None, None: resvg's default)."""
    if size is None:
        return None, None
    width, height = size
    scale = min(1.0, MAX_SVG_SIDE / max(width, height), (max_pixels / (width * height)) ** 0.5)
    return max(1, int(width * scale)), max(1, int(height * scale))


# --------------------------------------------------------------------------- text


def _size(count: int) -> str:
    from junobench.safety.archives import human_size

    return human_size(count)
