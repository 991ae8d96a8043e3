"""``junobench push DIR --repo-id ID``: upload an export to the Hub as one commit.

The export is checked first (:func:`junobench.hub.check.check`); then huggingface_hub creates
the dataset repo if needed (``HfApi.create_repo``), the branch if ``revision`` names a new
one, and uploads every file of the export in a single ``HfApi.create_commit`` of
``CommitOperationAdd``\\ s. The token comes from huggingface_hub's standard sources
(``HF_TOKEN``, the token file of ``hf auth login``) and is never printed. ``dry_run``
returns the operations without creating a client or touching the network.

>>> from junobench.hub.write_export import export
>>> _ = export("sample", "export")
>>> plan = push("export", "someone/junobench", dry_run=True)
>>> [op.path for op in plan.operations if not op.path.startswith("benchmark/")]
... # doctest: +NORMALIZE_WHITESPACE
['README.md', 'benchmark_desc.xlsx', 'cases/test-00000-of-00001.parquet', 'checksums.json',
 'croissant.json', 'environment/environment.json', 'ground_truth_crash_prediction.xlsx',
 'notebooks/test-00000-of-00001.parquet']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench.data.export import MANIFEST, file_digest, read_manifest
from junobench.errors import JunoBenchError
from junobench.safety.text import first_line

#: The HTTP clients under the Hub's client: an error of theirs is the network's.
HTTP_CLIENTS = ("httpx", "httpx2", "requests", "urllib3")


@dataclass(frozen=True)
class Upload:
    """One file of the commit: its path in the repo, size and sha256."""

    path: str
    size: int
    sha256: str


@dataclass
class PushResult:
    """What was (or, in a dry run, would be) sent."""

    repo_id: str
    revision: str
    private: bool
    operations: list[Upload]
    commit_message: str
    dry_run: bool
    commit_url: str | None = None
    commit_oid: str | None = None
    steps: list[str] = field(default_factory=list)


def plan(directory: str | Path) -> list[Upload]:
    """The files of a checked export, in upload order (sorted paths)."""
    from junobench.hub.check import check

    root = Path(directory)
    problems = check(root)
    if problems:
        listed = "; ".join(str(p) for p in problems)
        raise JunoBenchError(f"the export fails its check ({len(problems)} problem(s)): {listed}",
                             file=root, hint="see `junobench check DIR`, then re-export")
    files = dict(read_manifest(root)["files"])
    files[MANIFEST] = file_digest(root / MANIFEST)
    return [Upload(name, info["size"], info["sha256"]) for name, info in sorted(files.items())]


def push(
    directory: str | Path,
    repo_id: str,
    *,
    revision: str | None = None,
    private: bool = False,
    dry_run: bool = False,
    commit_message: str | None = None,
    endpoint: str | None = None,
) -> PushResult:
    """Upload the export ``directory`` to the dataset repo ``repo_id`` (at branch ``revision``).

    ``endpoint`` is the Hub's URL (default: ``HF_ENDPOINT`` or huggingface.co).
    """
    from junobench.data.snapshot import check_repo_id

    check_repo_id(repo_id)
    root = Path(directory)
    uploads = plan(root)
    rows = read_manifest(root).get("rows", {})
    message = commit_message or (
        f"Upload JunoBench export ({rows.get('cases', '?')} cases, {rows.get('notebooks', '?')} notebooks)")
    branch = revision or "main"
    result = PushResult(repo_id, branch, private, uploads, message, dry_run)
    result.steps = [f"create dataset repo {repo_id} if it does not exist ({'private' if private else 'public'})"]
    if revision and revision != "main":
        result.steps.append(f"create branch {revision} if it does not exist")
    result.steps.append(f"one commit to {branch} adding {len(uploads)} file(s): {message!r}")
    if dry_run:
        return result
    commit = commit_export(root, uploads, repo_id, revision=revision, private=private, message=message,
                           endpoint=endpoint)
    result.commit_url, result.commit_oid = commit.commit_url, commit.oid
    return result


def commit_export(root: Path, uploads: list[Upload], repo_id: str, *, revision: str | None, private: bool,
                  message: str, endpoint: str | None, extra: Mapping[str, bytes] | None = None,
                  parent_commit: str | None = None, branch_from: str | None = None) -> Any:
    """One commit of the export's ``uploads`` (and ``extra`` files, path → bytes) to
    ``repo_id`` at branch ``revision`` (created, with the repo, if needed: from
    ``branch_from``, default main's head); with ``parent_commit``, the Hub refuses it if the
    branch has moved since. Files of an earlier export the branch holds and this one does
    not (:func:`stale_files`) are deleted in the same commit, so that a case removed or
    renamed leaves no folder behind. Returns the client's ``CommitInfo``."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi, get_token

    where = f"{repo_id}@{revision or 'main'}"
    if get_token() is None:
        raise JunoBenchError("no Hugging Face token found", file=where,
                             hint="log in with `hf auth login` or set HF_TOKEN (a token with write access)")
    api = HfApi(endpoint=endpoint)
    operations: list[CommitOperationAdd | CommitOperationDelete] = [
        CommitOperationAdd(path_in_repo=u.path, path_or_fileobj=str(root / u.path)) for u in uploads]
    operations += [CommitOperationAdd(path_in_repo=name, path_or_fileobj=data)
                   for name, data in sorted((extra or {}).items())]
    with hub_call(where, "the upload"):
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        if private and api.repo_info(repo_id, repo_type="dataset").private is False:
            raise JunoBenchError("the repo exists and is public; --private applies to new repos only",
                                 file=where, hint="make it private on the Hub first, or push without --private")
        if revision and revision != "main":
            api.create_branch(repo_id, branch=revision, revision=branch_from, repo_type="dataset", exist_ok=True)
        present = api.list_repo_files(repo_id, repo_type="dataset", revision=parent_commit or revision)
        kept = {u.path for u in uploads} | set(extra or {})
        operations += [CommitOperationDelete(path_in_repo=name) for name in stale_files(present, kept)]
        return api.create_commit(repo_id, operations, commit_message=message, repo_type="dataset",
                                 revision=revision, parent_commit=parent_commit)


def stale_files(present: Iterable[str], kept: Iterable[str]) -> list[str]:
    """The files of ``present`` (a repo's) that an export writes and that ``kept`` (the new
    commit's) lacks; files an export never writes (a licence, images) stay."""
    from junobench.data.export import is_export_name

    keep = set(kept) | {MANIFEST}
    return sorted(name for name in present if name not in keep and is_export_name(name))


@contextmanager
def hub_call(where: str, what: str) -> Iterator[None]:
    """The Hub client's errors while doing ``what`` as one-line :class:`JunoBenchError` s."""
    from huggingface_hub.errors import HfHubHTTPError

    try:
        yield
    except HfHubHTTPError as error:
        status = error.response.status_code if error.response is not None else "?"
        raise JunoBenchError(f"the Hub refused {what} (HTTP {status}: {first_line(error)})", file=where,
                             hint="check the repo id and that your token has write access") from None
    except ValueError as error:  # the client's own checks, e.g. the card's YAML refused by the Hub
        raise JunoBenchError(f"{what} failed: {first_line(error)}", file=where) from None
    except Exception as error:
        if type(error).__module__.split(".")[0] in HTTP_CLIENTS:
            raise JunoBenchError(f"the Hub is unreachable ({first_line(error)})", file=where,
                                 hint="check your network, or HF_ENDPOINT") from None
        raise
