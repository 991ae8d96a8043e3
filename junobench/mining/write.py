"""Writing a mined corpus: parquet streamed as notebooks are mined, then the card, the
Croissant metadata and the manifest; the whole folder swapped in at the end.

::

    <out>/README.md                          dataset card: YAML configs + features, the summary
    <out>/notebooks/train-00000-of-00001.parquet
    <out>/cells/train-00000-of-00001.parquet
    <out>/figures/train-00000-of-00001.parquet   images as datasets.Image (bytes), row groups of 100
    <out>/croissant.json                     Croissant 1.0 (images as sc:ImageObject)
    <out>/checksums.json                     sha256 and size of every file, row counts, mapping version

Rows go to the parquet files in row groups as they arrive (:class:`CorpusWriter`): no more
than a row group's rows are held, whatever the corpus' size. The folder is written beside
``out`` and swapped in when complete (:mod:`junobench.safety.atomic`): a failed or
interrupted run leaves an earlier output as it was, and a run replaces only an earlier
mined corpus (its manifest lists its files), never a folder holding anything else.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from operator import itemgetter
from pathlib import Path
from typing import Any

from junobench.data.export import file_digest, is_file_digest
from junobench.errors import JunoBenchError
from junobench.mining.features import CONFIGS, PARQUET, schemas
from junobench.render import some
from junobench.safety.atomic import locked, recover, swapped_in, write_text
from junobench.safety.paths import read_untrusted, relative_name, unlisted_files

CARD = "README.md"
CROISSANT = "croissant.json"
MANIFEST = "checksums.json"
MANIFEST_FORMAT = "junobench-mined/1"
FILES: frozenset[str] = frozenset({CARD, CROISSANT, MANIFEST, *PARQUET.values()})
#: Rows per parquet row group: 100 figures (what the Hub's viewer reads at a time for
#: images), many more of the small rows.
ROW_GROUP: dict[str, int] = {"notebooks": 5000, "cells": 20000, "figures": 100}
#: Figures held at most while the files cannot be opened yet (``datasets`` being imported):
#: past them, the writer waits for the import.
HELD_FIGURES = 1000
#: Largest manifest read (a corpus of millions of notebooks lists a few files).
MAX_MANIFEST_BYTES = 16 << 20


def record_batch(config: str, rows: list[dict[str, Any]]) -> Any:
    """Rows of ``config`` as an Arrow record batch of its schema, built column by column
    (ten times faster than ``RecordBatch.from_pylist`` on rows of images)."""
    import pyarrow as pa

    schema = schemas()[config]
    return pa.RecordBatch.from_arrays([pa.array(list(map(itemgetter(f.name), rows)), type=f.type) for f in schema],
                                      schema=schema)


class _Digest:
    """The sha256 and size of a file another writer appends to, read as it grows (what
    was just written is still in the page cache): the manifest's digest without reading
    the whole file again at the end."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        self.sha256 = hashlib.sha256()
        self.size = 0
        self.block = bytearray(1 << 20)  # read into, again and again: no new memory for each read

    def update(self) -> None:
        """Digest what was appended since the last call."""
        view = memoryview(self.block)
        while count := os.preadv(self.fd, [self.block], self.size):
            self.sha256.update(view[:count])
            self.size += count

    def close(self) -> dict[str, Any]:
        """``{"sha256": hex, "size": bytes}`` of the whole file (:func:`file_digest`'s form)."""
        try:
            self.update()
        finally:
            os.close(self.fd)
        return {"sha256": self.sha256.hexdigest(), "size": self.size}


class CorpusWriter:
    """Streams mined rows (Arrow record batches) into the three parquet files of
    ``folder`` (a staging folder), in row groups of :data:`ROW_GROUP` rows whatever the
    batches' sizes. The same rows in the same record batches give the same files (the rows
    are the same whatever the batches, but the parquet writer's pages follow the batches'
    edges). Each file's digest is taken as it is written (:attr:`digests`, once closed).

    The files' schemas carry ``datasets``' metadata, and ``datasets`` takes a second or so
    to import: it is imported in a thread from the first rows on (the worker processes
    have started by then: none is forked while an import is under way), the rows held
    until the files are open (at most :data:`HELD_FIGURES` figures, then it waits)."""

    def __init__(self, folder: Path) -> None:
        schemas()  # pyarrow imported, the schemas made: worker processes forked from here on share them
        self.folder = folder
        self.schemas: dict[str, Any] = {}
        self.writers: dict[str, Any] = {}
        self.pending: dict[str, list[Any]] = {config: [] for config in CONFIGS}
        self.waiting: dict[str, int] = dict.fromkeys(CONFIGS, 0)
        self.rows: dict[str, int] = dict.fromkeys(CONFIGS, 0)
        self.reading: dict[str, _Digest] = {}
        self.digests: dict[str, dict[str, Any]] = {}
        self.preparing: Future[dict[str, Any]] | None = None

    def add(self, batches: Mapping[str, Any]) -> None:
        """Append record batches (config → batch) of mined rows."""
        for config, batch in batches.items():
            if batch.num_rows:
                self.pending[config].append(batch)
                self.waiting[config] += batch.num_rows
        if not self._open(wait=self.waiting["figures"] >= HELD_FIGURES):
            return
        for config in CONFIGS:
            if self.waiting[config] >= ROW_GROUP[config]:
                self._flush(config, whole=True)

    def _open(self, *, wait: bool) -> bool:
        """Whether the files are open; opened when their schemas are ready (``wait``: once
        they are)."""
        if self.writers:
            return True
        if self.preparing is None:
            from junobench.mining.features import written_schemas

            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="junobench-mine-schemas")
            self.preparing = pool.submit(written_schemas)
            pool.shutdown(wait=False)
        if not wait and not self.preparing.done():
            return False
        import pyarrow.parquet as pq

        self.schemas = self.preparing.result()
        for config in CONFIGS:
            path = self.folder / PARQUET[config]
            path.parent.mkdir(parents=True, exist_ok=True)
            # Images are PNG/JPEG already: compressing them again costs time and saves nothing.
            compression = {column: "NONE" if column == "image.bytes" else "ZSTD"
                           for column in _leaf_columns(self.schemas[config])}
            self.writers[config] = pq.ParquetWriter(
                path, self.schemas[config], compression=compression, use_dictionary=False,
                write_statistics=[c for c in compression if c != "image.bytes"])
            self.reading[config] = _Digest(path)
        return True

    def _flush(self, config: str, *, whole: bool = False) -> None:
        """Write the pending rows (with ``whole``: only whole row groups, the rest kept), a
        row group at a time: the batches written are let go of as it goes (rows held while
        the files could not be opened are not all in memory at once)."""
        import pyarrow as pa

        size = ROW_GROUP[config]
        pending = self.pending[config]
        while pending and (self.waiting[config] >= size or not whole):
            count, taken = 0, 0
            while taken < len(pending) and count < size:
                count += pending[taken].num_rows
                taken += 1
            table = pa.Table.from_batches(pending[:taken], schema=self.schemas[config])
            cut = min(size, table.num_rows)
            self.writers[config].write_table(table.slice(0, cut), row_group_size=size)
            self.rows[config] += cut
            self.waiting[config] -= cut
            rest = table.slice(cut)
            pending[:taken] = rest.to_batches() if rest.num_rows else []
            del table, rest
        self.reading[config].update()

    def close(self) -> dict[str, int]:
        """Write what is pending and close the files; the row count of each config."""
        self._open(wait=True)
        for config in CONFIGS:
            self._flush(config)
            self.writers[config].close()
            self.digests[config] = self.reading.pop(config).close()
        return dict(self.rows)

    def abort(self) -> None:
        for writer in self.writers.values():
            with contextlib.suppress(Exception):
                writer.close()
        for digest in self.reading.values():
            with contextlib.suppress(OSError):
                os.close(digest.fd)


def _leaf_columns(schema: Any) -> list[str]:
    """The dotted paths of a schema's leaf columns (``image.bytes``), as parquet names them."""
    import pyarrow as pa

    def leaves(name: str, kind: Any) -> list[str]:
        if pa.types.is_struct(kind):
            return [leaf for child in kind for leaf in leaves(f"{name}.{child.name}", child.type)]
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            return leaves(f"{name}.list.element", kind.value_type)
        return [name]

    return [leaf for field in schema for leaf in leaves(field.name, field.type)]


def finish(folder: Path, rows: Mapping[str, int], summary: Mapping[str, Any], *, mapping: str,
           inputs: list[str], repo_id: str, version: str, digests: Mapping[str, Mapping[str, Any]]) -> None:
    """Write the card, ``croissant.json`` and the manifest of the parquet files in ``folder``
    (``digests``: each config's file's, as :attr:`CorpusWriter.digests` took them)."""
    from junobench.mining.card import render_card, render_croissant

    write_text(folder / CARD, render_card(rows, summary, digests, mapping=mapping, inputs=inputs,
                                          repo_id=repo_id, version=version))
    croissant = render_croissant(rows, summary, digests, mapping=mapping, repo_id=repo_id, version=version)
    write_text(folder / CROISSANT, json.dumps(croissant, indent=2, ensure_ascii=False) + "\n")
    parquet = {PARQUET[config]: digests[config] for config in CONFIGS}
    manifest = {
        "format": MANIFEST_FORMAT,
        "files": {name: file_digest(folder / name) if name not in parquet else dict(parquet[name])
                  for name in sorted(FILES - {MANIFEST})},
        "rows": dict(rows),
        "mapping": mapping,
        "inputs": inputs,
    }
    write_text(folder / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")


@contextlib.contextmanager
def replacing(out: Path) -> Iterator[Path]:
    """A staging folder beside ``out`` to fill; swapped in at ``out`` when the block ends
    without error (the earlier output's files then removed), removed otherwise."""
    check_target(out)
    with locked(out.parent):
        recover(out, owned=_is_own_folder)
        check_target(out)
        with swapped_in(out, FILES) as staging:
            yield staging


def check_target(out: Path) -> None:
    """Refuse an ``out`` that is a link, a file, or a folder holding anything but an
    earlier mined corpus."""
    if out.is_symlink():
        raise JunoBenchError("the output is a symbolic link", file=out, hint="give the real path of a folder")
    if out.exists() and not out.is_dir():
        raise JunoBenchError("the output exists and is not a folder", file=out, hint="choose a new folder")
    if not out.is_dir() or not any(out.iterdir()):
        return
    hint = ("mine replaces only an earlier mined corpus, and nothing else: choose a new or empty folder, "
            "or move those files away")
    listed = read_manifest(out, hint=hint)
    foreign = unlisted_files(out, set(listed) | {MANIFEST})
    if foreign:
        raise JunoBenchError(f"the folder holds files mine did not write: {some(foreign, 5)}", file=out, hint=hint)


def read_manifest(folder: Path, *, hint: str | None = None) -> dict[str, Any]:
    """The files an earlier mined corpus in ``folder`` lists (name → digest: ``sha256``,
    ``size``); its manifest is read as data from elsewhere: never through a link, without
    blocking, up to a bound."""
    path = folder / MANIFEST
    try:
        data = json.loads(read_untrusted(path, limit=MAX_MANIFEST_BYTES, whole=True).decode("utf-8"))
    except FileNotFoundError:
        raise JunoBenchError(f"the folder is not empty and holds no {MANIFEST}: not a mined corpus", file=folder,
                             hint=hint) from None
    except OSError as error:
        problem = "a symbolic link, never followed" if error.errno == errno.ELOOP else str(error)[:120]
        raise JunoBenchError(f"the manifest is unreadable ({problem})", file=path, hint=hint) from None
    except (ValueError, RecursionError) as error:
        raise JunoBenchError(f"the manifest is unreadable ({str(error)[:120]})", file=path, hint=hint) from None
    files = data.get("files") if isinstance(data, dict) and data.get("format") == MANIFEST_FORMAT else None
    if not isinstance(files, dict) or not all(relative_name(n) == n and n in FILES and is_file_digest(d)
                                              for n, d in files.items()):
        raise JunoBenchError(f"not a {MANIFEST_FORMAT} manifest", file=path, hint=hint)
    return files


_TEMPORARY = re.compile(r"^(?:[^/]+/)?\.[^/]+\.tmp$")


def _is_own_folder(folder: Path) -> bool:
    """Whether a folder a killed run left beside the output holds only what mine writes."""
    return not [n for n in unlisted_files(folder, set(FILES)) if not _TEMPORARY.match(n)]
