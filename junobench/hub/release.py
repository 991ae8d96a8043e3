"""``junobench release SNAPSHOT --repo-id ID``: a new version of the benchmark on the Hub.

A release is, in order: the version (the snapshot's ``VERSION`` file, or ``version=``, then
written there); the snapshot validated; the Hub read (the repo at ``revision``: its head
commit, tags, card and ``CHANGELOG.md``; a repo that does not exist yet is a first
release); the diff against the previous release (the Hub repo's export at that commit, or
``previous=`` any source :func:`junobench.load` reads); an export (card, parquet,
``croissant.json``); the changelog entry made from the diff, put on top of the Hub's
``CHANGELOG.md``; the card's diff against the Hub's; then one commit of the export and
``CHANGELOG.md`` to ``revision`` (refused by the Hub if the branch moved since it was read)
and the tag ``v<version>`` on that commit. A tag that exists already is refused before
anything is sent: a release is never moved. ``dry_run`` does everything but writing the
``VERSION`` file and sending; a dry run that cannot reach the Hub (offline,
``HF_HUB_OFFLINE=1``) says so and compares with ``previous`` or with nothing.

>>> plan = release("mybench", "someone/bench", version="1.1.0", previous="sample",
...                dry_run=True, offline=True)                              # doctest: +SKIP
>>> print(plan.entry)                                                       # doctest: +SKIP
"""

from __future__ import annotations

import datetime
import difflib
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from junobench.data.layout import RENAMED_CASES, VERSION_FILE
from junobench.errors import JunoBenchError
from junobench.hub.changes import SnapshotDiff
from junobench.render import first_names
from junobench.safety.text import first_line

CHANGELOG = "CHANGELOG.md"
CHANGELOG_TITLE = "# Changelog"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}\Z")
_TAG = re.compile(r"^[A-Za-z0-9][\w.-]{0,99}\Z")


@dataclass
class HubState:
    """What the Hub holds for the release's repo and branch (all None: nothing read)."""

    exists: bool = False
    head: str | None = None            # the commit read (the branch's, else main's for a new branch)
    tags: list[str] = field(default_factory=list)
    card: str | None = None
    changelog: str | None = None
    has_export: bool = False           # an export or a snapshot: a previous release
    renamed: str | None = None         # its renamed_cases.json
    files: list[str] = field(default_factory=list)  # what the branch holds
    note: str = ""
    branch_exists: bool = True         # False: the release's branch is made from main's head


@dataclass
class ReleaseResult:
    """What a release did (or, in a dry run, would do)."""

    snapshot: Path
    repo_id: str
    revision: str
    version: str
    tag: str
    dry_run: bool
    hub: HubState
    previous: str | None
    diff: SnapshotDiff
    entry: str
    changelog: str
    card_diff: str
    export_dir: Path | None
    files: list[str]
    steps: list[str] = field(default_factory=list)
    commit_oid: str | None = None
    commit_url: str | None = None
    renamed: bytes | None = None       # the renamed_cases.json released

    def report(self) -> str:
        """The plan (dry run) or what was done, as text."""
        from junobench.safety.text import printable

        verb = "dry run: would release" if self.dry_run else "released"
        lines = [f"{verb} {self.snapshot} as version {self.version} to dataset repo {self.repo_id} "
                 f"({self.revision}), tag {self.tag}", f"hub: {self.hub.note}",
                 f"compared with: {self.previous or 'nothing (first release)'}: {self.diff.summary()}", "steps:"]
        lines += [f"  - {step}" for step in self.steps]
        lines += ["files:"] + [f"  {name}" for name in self.files]
        lines += ["", f"changelog entry ({CHANGELOG}):", "", self.entry.rstrip(), ""]
        lines += ["card diff (the Hub's README.md → the new one):", ""]
        lines += [self.card_diff.rstrip() or "(no change)", ""]
        if self.dry_run:
            lines.append("dry run: nothing was written or sent")
        else:
            lines.append(f"commit {self.commit_oid}: {self.commit_url}")
            lines.append(f"tag {self.tag} → {self.commit_oid}")
        return "\n".join(printable(line) for line in lines) + "\n"


def release(snapshot: str | Path, repo_id: str, *, version: str | None = None, revision: str = "main",
            tag: str | None = None, previous: str | Path | None = None, out: Path | None = None,
            date: str | None = None, private: bool = False, dry_run: bool = False,
            offline: bool = False, endpoint: str | None = None, require_verified: bool = False,
            licences: Any = None, licence_policy: str = "warn",
            progress: Callable[[str], None] | None = None) -> ReleaseResult:
    """Release ``snapshot`` to the dataset repo ``repo_id`` (see the module docstring).

    ``out`` keeps the export (default: a temporary directory, removed afterwards);
    ``offline`` (dry runs only) does not read the Hub. A case whose provenance records no
    passing verification is named in a warning; with ``require_verified`` the release is
    refused. ``licences`` and ``licence_policy`` are the export's (data files whose licence
    the policy does not allow: named, or refused with ``"error"``). ``progress`` is told
    each step as it starts.
    """
    from junobench.data.release_files import dataset_version
    from junobench.data.validate import snapshot_root

    step = progress or (lambda _: None)
    _check_request(snapshot, repo_id, offline=offline, dry_run=dry_run)
    root = snapshot_root(snapshot)
    recorded = dataset_version(root)
    version, tag, date = _names(root, version, recorded, tag, date)
    if not dry_run:
        _require_token(repo_id)
    step("validating the snapshot")
    validation = _validated(root, licences, licence_policy)
    unverified = _unverified(root)
    if unverified and require_verified:
        raise JunoBenchError(f"{len(unverified)} case(s) have no recorded passing verification: "
                             + first_names(unverified, 20), file=root,
                             hint="run `junobench verify --record` on them (or leave out --require-verified)")
    step(f"reading {repo_id} on the Hub")
    hub = HubState(note="not read (offline dry run)") if offline else \
        read_hub(repo_id, revision, endpoint=endpoint, dry_run=dry_run)
    if tag in hub.tags:
        raise JunoBenchError(f"the tag {tag} exists already in {repo_id}", file=f"{repo_id}@{tag}",
                             hint="a release is never moved: release a new version")
    steps = _validation_steps(validation, unverified)
    temporary = None if out is not None else tempfile.TemporaryDirectory(prefix="junobench-release-")
    try:
        export_dir = Path(temporary.name) / "export" if temporary is not None else Path(str(out))
        result = _prepare(root, repo_id, revision, version, tag, date, previous, hub, export_dir, dry_run, steps,
                          licences=licences, licence_policy=licence_policy, step=step)
        if version != recorded:
            result.steps.append(f"once tagged, write {version} into {VERSION_FILE} of the snapshot")
        if not dry_run:
            step(f"sending one commit of {len(result.files)} file(s) to {repo_id} and tagging it {tag}")
            _publish(result, private=private, endpoint=endpoint)
            _record_release(root, result, recorded)
        if temporary is not None:
            result.export_dir = None
        return result
    finally:
        if temporary is not None:
            temporary.cleanup()


def _check_request(snapshot: str | Path, repo_id: str, *, offline: bool, dry_run: bool) -> None:
    """Refuse what no release can be: a repo id that is not one, offline outside a dry
    run, the bundled sample."""
    from junobench.data.snapshot import check_repo_id

    check_repo_id(repo_id)
    if offline and not dry_run:
        raise JunoBenchError("a release is sent to the Hub: offline works for a dry run only",
                             hint="add --dry-run, or leave out offline")
    if str(snapshot) == "sample":
        raise JunoBenchError("the bundled sample is not released", file="sample",
                             hint="copy it first: junobench checkout --source sample --dest DIR CASE…")


def _names(root: Path, given: str | None, recorded: str | None, tag: str | None,
           date: str | None) -> tuple[str, str, str]:
    """The release's version (``given``, checked, else the snapshot's ``recorded`` one), tag
    (default ``v<version>``) and date (default: today, UTC), each refused when it is not one."""
    from junobench.data.release_files import check_version

    version = check_version(given, file=root / VERSION_FILE) if given else recorded
    if version is None:
        raise JunoBenchError("the snapshot declares no version", file=root / VERSION_FILE,
                             hint="pass --version MAJOR.MINOR.PATCH (it is written into VERSION)")
    tag = tag or f"v{version}"
    if not _TAG.match(tag):
        raise JunoBenchError(f"not a tag name: {tag!r}", hint="letters, digits, '.', '_' and '-', e.g. v1.1.0")
    date = date or datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    try:
        if not _DATE.match(date):
            raise ValueError(date)
        datetime.date.fromisoformat(date)
    except ValueError:
        raise JunoBenchError(f"not a date: {date!r}", hint="use YYYY-MM-DD") from None
    return version, tag, date


def _require_token(repo_id: str) -> None:
    from huggingface_hub import get_token

    if get_token() is None:
        raise JunoBenchError("no Hugging Face token found", file=repo_id,
                             hint="log in with `hf auth login` or set HF_TOKEN (a token with write "
                                  "access), or add --dry-run")


def _validated(root: Path, licences: Any, licence_policy: str) -> Any:
    """The snapshot's validation (licences warned of here: the export applies the policy);
    a snapshot with problems is refused."""
    from junobench.data.validate import check

    validation = check(root, licences=licences, licence_policy="off" if licence_policy == "off" else "warn")
    if validation.problems:
        shown = "; ".join(str(p) for p in validation.problems[:3])
        raise JunoBenchError(f"the snapshot is not valid ({len(validation.problems)} problem(s): {shown})",
                             file=root, hint="fix them first: see `junobench validate`")
    return validation


def _validation_steps(validation: Any, unverified: list[str]) -> list[str]:
    """The report's first lines: the validation, its licence warnings, the unverified cases."""
    steps = [f"validated: {validation.cases} cases"
             + (f", {len(validation.warnings)} warning(s) (see `junobench validate`)"
                if validation.warnings else ", no warning")]
    steps += [f"warning: {problem}" for problem in sorted({w.problem for w in validation.warnings
                                                           if "licence" in w.problem})]
    if unverified:
        steps.append(f"warning: {len(unverified)} case(s) not verified (no passing `junobench verify --record` "
                     f"or add-case run recorded in their provenance; the card says so): "
                     + first_names(unverified, 20))
    return steps


def _record_release(root: Path, result: ReleaseResult, recorded: str | None) -> None:
    """Once published, the snapshot records the version it was released as and the
    renamed-cases record the release holds."""
    from junobench.safety.atomic import write_bytes, write_text

    if result.version != recorded:
        write_text(root / VERSION_FILE, result.version + "\n")
    if result.renamed is not None and result.renamed != _own_renamed(root):
        write_bytes(root / RENAMED_CASES, result.renamed)


def _prepare(root: Path, repo_id: str, revision: str, version: str, tag: str, date: str,
             previous: str | Path | None, hub: HubState, export_dir: Path, dry_run: bool,
             steps: list[str], *, licences: Any = None, licence_policy: str = "warn",
             step: Callable[[str], None] = lambda _: None) -> ReleaseResult:
    from junobench.data.export import CARD
    from junobench.hub.push import plan, stale_files
    from junobench.hub.write_export import export

    resumed = latest_entry(hub.changelog, version) if previous is None else None
    if resumed is not None:  # the release's own date, so that the same files are made again
        found = re.match(rf"## {re.escape(version)} \((\d{{4}}-\d{{2}}-\d{{2}})\)", resumed)
        date = found.group(1) if found else date
    step("comparing with the previous release")
    if resumed is not None:
        # the head holds this version already, untagged (a release interrupted after its
        # commit): its entry stands, and the same files make no new commit
        entry, changelog = resumed, hub.changelog or ""
        diff, compared = _diff(root, repo_id, hub, None)
        renamed = hub.renamed.encode("utf-8") if hub.renamed is not None else None
        steps.append(f"the Hub's head already holds version {version} (not tagged): finish that release")
    else:
        diff, compared = _diff(root, repo_id, hub, previous)
        entry = diff.markdown(heading=f"{version} ({date})", level=2)
        changelog = merge_changelog(entry, hub.changelog)
        from_hub = hub.has_export and previous is None
        earlier = hub.renamed if from_hub else _own_renamed_text(root)
        renamed = renamed_record(earlier, version, date, diff if compared is not None else None,
                                 source=f"{repo_id}: {RENAMED_CASES}" if from_hub else root / RENAMED_CASES)
    if renamed is not None:
        steps.append(f"{RENAMED_CASES}: " + _renamed_words(diff if compared is not None and resumed is None else None))
    step("exporting the snapshot (parquet, card, croissant.json, the snapshot layout, checksums)")
    exported = export(root, export_dir, repo_id=repo_id, version=version, published=date,  # VERSION may be unwritten
                      licences=licences, licence_policy=licence_policy,
                      renamed=renamed if renamed is not None else b"")
    steps += [f"warning: {w}" for w in exported.warnings]
    new_card = (export_dir / CARD).read_text(encoding="utf-8")
    card_diff = "".join(difflib.unified_diff(
        (hub.card or "").splitlines(keepends=True), new_card.splitlines(keepends=True),
        fromfile=f"{repo_id}@{hub.head or revision}/{CARD}" if hub.card is not None else "/dev/null",
        tofile=f"export/{CARD}"))
    uploads = plan(export_dir)
    files = [u.path for u in uploads] + [CHANGELOG]
    if not hub.exists:
        steps.append(f"create dataset repo {repo_id}")
    if not hub.branch_exists:
        steps.append(f"create branch {revision} from main")
    parent = _parent(hub)
    stale = stale_files(hub.files, files)
    steps.append(f"one commit to {revision} adding {len(files)} file(s): the export and {CHANGELOG}"
                 + (f", deleting {len(stale)} file(s) of the previous release this one does not hold "
                    f"({first_names(stale, 4)})" if stale else "")
                 + (f" (on top of {parent[:12]}: refused if the branch moves meanwhile)" if parent else ""))
    steps.append(f"tag the commit {tag}")
    return ReleaseResult(root, repo_id, revision, version, tag, dry_run, hub, compared, diff, entry, changelog,
                         card_diff, export_dir, sorted(files), steps, renamed=renamed)


def _diff(root: Path, repo_id: str, hub: HubState, previous: str | Path | None) -> tuple[SnapshotDiff, str | None]:
    """The diff from the previous release to ``root``, and what it was compared with."""
    from junobench.hub.changes import compare, diff
    from junobench.loader import load

    if previous is not None:
        return diff(previous, root), str(previous)
    if hub.has_export and hub.head is not None:
        return diff(repo_id, root, old_revision=hub.head), f"{repo_id}@{hub.head[:12]}"
    cases = load(root, "cases").to_list()
    return compare([], cases, old="nothing", new=str(root)), None


def _unverified(root: Path) -> list[str]:
    """The cases whose provenance records no passing verification."""
    from junobench.data.provenance import VERIFIED, layout_order, status_of
    from junobench.loader import load

    cases = load(root, "cases").select_columns(["case_id", "provenance"]).to_list()
    return sorted((c["case_id"] for c in cases if status_of(c) != VERIFIED), key=layout_order)


def renamed_record(earlier: str | None, version: str, date: str, diff: SnapshotDiff | None, *,
                   source: str | Path = RENAMED_CASES) -> bytes | None:
    """The ``renamed_cases.json`` a release holds: the earlier releases' entries (of
    ``earlier``, the previous release's record, read from ``source``), then, when ``diff``
    (from the previous release) renames or removes cases, this release's: ``{"version",
    "date", "renamed": {published id: new id}, "removed": [published ids]}``. Only
    published ids appear: the diff is from what was released. None when there is nothing
    to record. An earlier record that is not a JSON object whose ``releases`` (if any) is a
    list of objects is an error naming ``source``: its entries are never dropped unsaid."""
    import json

    entries: list[Any] = []
    if earlier:
        try:
            data = json.loads(earlier)
        except ValueError as error:
            data = error
        releases = data.get("releases", []) if isinstance(data, dict) else None
        if not isinstance(releases, list) or not all(isinstance(e, dict) for e in releases):
            raise JunoBenchError("the record of renamed cases is not a JSON object whose \"releases\" "
                                 "is a list of objects", file=source,
                                 hint="restore it from the previous release")
        entries = releases
    entries = [e for e in entries if e.get("version") != version]
    if diff is not None and (diff.renamed or diff.removed):
        entries.append({"version": version, "date": date,
                        "renamed": {c.old_id: c.case_id for c in diff.renamed},
                        "removed": [c["case_id"] for c in diff.removed]})
    if not entries:
        return None
    return (json.dumps({"releases": entries}, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _renamed_words(diff: SnapshotDiff | None) -> str:
    if diff is None or not (diff.renamed or diff.removed):
        return "the earlier releases' renames and removals, carried"
    return (f"{len(diff.renamed)} published id(s) renamed, {len(diff.removed)} removed in this release "
            "(with the earlier releases')")


def _own_renamed_text(root: Path) -> str | None:
    data = _own_renamed(root)
    return data.decode("utf-8", errors="replace") if data is not None else None


def _own_renamed(root: Path) -> bytes | None:
    """The snapshot's own ``renamed_cases.json`` (None without one)."""
    from junobench.hub.write_export import carried_files

    return carried_files(root).get(RENAMED_CASES)


def latest_entry(changelog: str | None, version: str) -> str | None:
    """The top entry of ``changelog`` when it is the one of ``version``, else None."""
    body = (changelog or "").strip().removeprefix(CHANGELOG_TITLE).strip()
    if not body.startswith(f"## {version} ("):
        return None
    following = body.find("\n## ", 1)
    return body if following < 0 else body[:following].rstrip() + "\n"


def merge_changelog(entry: str, existing: str | None) -> str:
    """``entry`` on top of an existing changelog (its title kept once)."""
    body = (existing or "").strip().removeprefix(CHANGELOG_TITLE).strip()
    parts = [CHANGELOG_TITLE, entry.strip(), *([body] if body else [])]
    return "\n\n".join(parts) + "\n"


def read_hub(repo_id: str, revision: str, *, endpoint: str | None = None, dry_run: bool = False) -> HubState:
    """The repo's state at ``revision``; an unreachable Hub is an error, except in a dry run."""
    from huggingface_hub import HfApi
    from huggingface_hub import errors as hf_errors

    from junobench.data.export import PARQUET
    from junobench.data.layout import DESC_TABLE

    api = HfApi(endpoint=endpoint)
    where = f"{repo_id}@{revision}"
    try:
        try:
            info = api.dataset_info(repo_id, revision=revision, files_metadata=False)
        except hf_errors.RevisionNotFoundError:
            if revision == "main":
                raise
            state = read_hub(repo_id, "main", endpoint=endpoint, dry_run=dry_run)
            state.branch_exists = False
            state.note = f"branch {revision} does not exist yet: made from main; {state.note}"
            return state
        refs = api.list_repo_refs(repo_id, repo_type="dataset")
        siblings = {s.rfilename for s in info.siblings or []}
        head = info.sha or revision
        state = HubState(True, info.sha, [t.name for t in refs.tags],
                         has_export=all(p in siblings for p in PARQUET.values()) or DESC_TABLE in siblings,
                         files=sorted(siblings))
        state.card = _read(api, repo_id, head, "README.md") if "README.md" in siblings else None
        state.changelog = _read(api, repo_id, head, CHANGELOG) if CHANGELOG in siblings else None
        state.renamed = _read(api, repo_id, head, RENAMED_CASES) if RENAMED_CASES in siblings else None
        tags = ", ".join(state.tags) or "none"
        state.note = (f"{repo_id} at {revision} is commit {info.sha}; tags: {tags}; "
                      + ("it holds a release" if state.has_export else "it holds no export or snapshot"))
        return state
    except hf_errors.RepositoryNotFoundError:
        return HubState(False, note=f"{repo_id} does not exist yet: a first release")
    except Exception as error:
        if not _unreachable(error):
            if isinstance(error, hf_errors.HfHubHTTPError):
                raise JunoBenchError(f"the Hub refused reading the repo ({first_line(error)})", file=where,
                                     hint="check the repo id, the revision and your token") from None
            raise
        if not dry_run:
            raise JunoBenchError(f"the Hub is unreachable ({first_line(error)})", file=where,
                                 hint="check your network, or HF_ENDPOINT") from None
        return HubState(note=f"unreachable ({first_line(error)}): the card and changelog are "
                                    "compared with nothing")


def _read(api: Any, repo_id: str, commit: str, name: str) -> str | None:
    from huggingface_hub import hf_hub_download

    path = hf_hub_download(repo_id, name, repo_type="dataset", revision=commit, endpoint=api.endpoint)
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _unreachable(error: BaseException) -> bool:
    from huggingface_hub import errors as hf_errors

    from junobench.hub.push import HTTP_CLIENTS

    offline = getattr(hf_errors, "OfflineModeIsEnabled", ConnectionError)  # a ConnectionError in any case
    if isinstance(error, (offline, hf_errors.LocalEntryNotFoundError, ConnectionError, OSError)):
        return True
    if isinstance(error, hf_errors.HfHubHTTPError):
        return error.response is None or error.response.status_code >= 500
    return type(error).__module__.split(".")[0] in HTTP_CLIENTS


def _parent(hub: HubState) -> str | None:
    """The commit the release's commit must follow (None: a new repo or a new branch)."""
    return hub.head if hub.branch_exists else None


def _publish(result: ReleaseResult, *, private: bool, endpoint: str | None) -> None:
    """The commit and the tag."""
    from huggingface_hub import HfApi

    from junobench.hub.push import commit_export, hub_call, plan

    assert result.export_dir is not None
    uploads = plan(result.export_dir)
    message = f"JunoBench {result.version}"
    commit = commit_export(result.export_dir, uploads, result.repo_id, revision=result.revision, private=private,
                           message=message, endpoint=endpoint,
                           extra={CHANGELOG: result.changelog.encode("utf-8")}, parent_commit=_parent(result.hub),
                           branch_from=None if result.hub.branch_exists else result.hub.head)
    result.commit_oid, result.commit_url = commit.oid, commit.commit_url
    with hub_call(f"{result.repo_id}@{commit.oid}", f"the tag {result.tag}"):
        HfApi(endpoint=endpoint).create_tag(result.repo_id, tag=result.tag, revision=commit.oid,
                                            tag_message=f"JunoBench {result.version}", repo_type="dataset")
