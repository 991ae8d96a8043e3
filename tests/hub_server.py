"""A local stand-in for the Hugging Face Hub's HTTP API, for tests of push and download.

It serves, on 127.0.0.1, the endpoints huggingface_hub's ``HfApi.create_repo``,
``create_branch``, ``create_tag``, ``delete_tag``, ``list_repo_refs``, ``create_commit``
(preupload, YAML validation, the git-LFS batch API with basic transfers, the ndjson
commit, its ``parentCommit`` check) and ``snapshot_download`` (repo info, recursive
tree, ``resolve`` with ETag / X-Repo-Commit / X-Linked-* headers, LFS files redirected to a
storage host, 127.0.0.2) call,
with the status codes and ``X-Error-Code`` headers the client interprets. Writes need the
configured token. Repos live in memory: commits are snapshots of ``{path: bytes}``.

Xet storage is not served: clients must run with ``HF_HUB_DISABLE_XET=1`` (the client's
standard switch), which makes them use the LFS protocol this server speaks.

>>> with HubServer(token="hf_test") as hub:               # doctest: +SKIP
...     hub.url, hub.requests
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

_LFS_POINTER = "version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n"


def git_blob_id(data: bytes) -> str:
    """The git object id of a blob with ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Repo:
    private: bool
    branches: dict[str, str] = field(default_factory=dict)  # branch -> commit oid
    tags: dict[str, str] = field(default_factory=dict)  # tag -> commit oid
    tag_messages: dict[str, str] = field(default_factory=dict)
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)  # oid -> tree
    lfs_paths: dict[str, set[str]] = field(default_factory=dict)  # oid -> paths stored as LFS
    messages: dict[str, str] = field(default_factory=dict)


class HubServer:
    """Run the stand-in in a thread; ``requests`` records ``(method, path)`` of every request."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.repos: dict[tuple[str, str], Repo] = {}
        self.lfs: dict[str, bytes] = {}
        self.requests: list[tuple[str, str]] = []
        self.auth_seen: list[str | None] = []
        self._lock = threading.Lock()
        handler = _handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        # LFS objects are stored and served on another host, as the Hub's storage/CDN is.
        self._storage = ThreadingHTTPServer(("127.0.0.2", 0), handler)
        self._threads = [threading.Thread(target=s.serve_forever, daemon=True)
                         for s in (self._server, self._storage)]

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def storage_url(self) -> str:
        host, port = self._storage.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> HubServer:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in (self._server, self._storage):
            server.shutdown()
            server.server_close()

    # ------------------------------------------------------------------ state helpers

    def head_tree(self, repo_type: str, repo_id: str, revision: str = "main") -> dict[str, bytes]:
        repo = self.repos[(repo_type, repo_id)]
        return repo.commits[self.resolve(repo, revision)]

    @staticmethod
    def resolve(repo: Repo, revision: str) -> str | None:
        """A branch, a tag or a commit id (the Hub's order) → the commit id."""
        if revision in repo.branches:
            return repo.branches[revision]
        if revision in repo.tags:
            return repo.tags[revision]
        return revision if revision in repo.commits else None

    def commit(self, repo: Repo, branch: str, tree: dict[str, bytes], lfs: set[str], message: str) -> str:
        parent = repo.branches.get(branch, "")
        oid = hashlib.sha1(f"{parent}\n{message}\n{sorted(tree)}\n{len(repo.commits)}".encode()).hexdigest()
        repo.commits[oid] = tree
        repo.lfs_paths[oid] = lfs
        repo.messages[oid] = message
        repo.branches[branch] = oid
        return oid


def _handler(hub: HubServer) -> type[BaseHTTPRequestHandler]:
    repo_part = r"(?P<type>datasets|models|spaces)/(?P<repo>[^/]+/[^/]+?)"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        # ------------------------------------------------------------- plumbing

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                data = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        return data
                    data += self.rfile.read(size)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _send(self, status: int, body: bytes | dict | list | None = None, *,
                  headers: dict[str, str] | None = None, head: bool = False,
                  content_type: str = "application/json") -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if not head and self.command != "HEAD":  # an answer to HEAD has no body, errors included
                self.wfile.write(data)

        def _error(self, status: int, message: str, code: str | None = None) -> None:
            headers = {"X-Error-Message": message}
            if code:
                headers["X-Error-Code"] = code
            self._send(status, {"error": message}, headers=headers)

        def _authorized(self) -> bool:
            auth = self.headers.get("Authorization")
            hub.auth_seen.append(auth)
            return auth == f"Bearer {hub.token}"

        def _signed_in(self) -> bool:
            """Whether the request carries the token; a 401 answered when it does not."""
            if self._authorized():
                return True
            self._error(401, "Invalid credentials in Authorization header")
            return False

        def _writable(self, kind: str, repo_id: str) -> Repo | None:
            """The repo a write names, once the token and the repo are checked (else answered)."""
            return self._repo(kind, repo_id) if self._signed_in() else None

        def _repo(self, kind: str, repo_id: str) -> Repo | None:
            repo = hub.repos.get((kind.rstrip("s"), repo_id))
            if repo is None or (repo.private and not self._authorized()):
                self._error(404, f"Repository Not Found for url: {self.path}", "RepoNotFound")
                return None
            return repo

        def _route(self, method: str) -> None:
            parts = urlsplit(self.path)
            path, query = unquote(parts.path), parse_qs(parts.query)
            hub.requests.append((method, path))
            with hub._lock:
                for pattern, name in ROUTES:
                    if pattern[0] == method and (match := re.fullmatch(pattern[1], path)):
                        getattr(self, name)(query=query, **match.groupdict())
                        return
            self._error(404, f"no route {method} {path}")

        def do_GET(self) -> None:
            self._route("GET")

        def do_HEAD(self) -> None:
            self._route("HEAD")

        def do_POST(self) -> None:
            self._route("POST")

        def do_PUT(self) -> None:
            self._route("PUT")

        def do_DELETE(self) -> None:
            self._route("DELETE")

        # ------------------------------------------------------------- writes

        def create_repo(self, query: dict) -> None:
            payload = json.loads(self._body())
            if not self._signed_in():
                return
            kind = payload.get("type") or "model"
            repo_id = f"{payload['organization']}/{payload['name']}"
            prefix = "" if kind == "model" else f"{kind}s/"
            if (kind, repo_id) in hub.repos:  # the Hub's 409 names the existing repo's url
                self._send(409, {"error": f"You already created this {kind} repo",
                                 "url": f"{hub.url}/{prefix}{repo_id}"},
                           headers={"X-Error-Message": f"You already created this {kind} repo"})
                return
            repo = Repo(private=payload.get("visibility") == "private" or bool(payload.get("private")))
            hub.commit(repo, "main", {".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"},
                       set(), "initial commit")
            hub.repos[(kind, repo_id)] = repo
            self._send(200, {"url": f"{hub.url}/{prefix}{repo_id}", "name": repo_id})

        def create_branch(self, type: str, repo: str, branch: str, query: dict) -> None:
            payload = json.loads(self._body() or b"{}")
            found = self._writable(type, repo)
            if found is None:
                return
            if branch in found.branches:
                self._error(409, f"Reference refs/heads/{branch} already exists")
                return
            start = hub.resolve(found, payload.get("startingPoint") or "main")
            if start is None:
                self._error(404, "Invalid rev id", "RevisionNotFound")
                return
            found.branches[branch] = start
            self._send(200, {})

        def create_tag(self, type: str, repo: str, revision: str, query: dict) -> None:
            payload = json.loads(self._body() or b"{}")
            found = self._writable(type, repo)
            if found is None:
                return
            tag = payload.get("tag") or ""
            if not re.fullmatch(r"[\w.-]+", tag):
                self._error(400, f"Invalid tag name {tag!r}")
                return
            if tag in found.tags:
                self._error(409, f"Tag {tag} already exists")
                return
            oid = hub.resolve(found, revision)
            if oid is None:
                self._error(404, f"Invalid rev id: {revision}", "RevisionNotFound")
                return
            found.tags[tag] = oid
            found.tag_messages[tag] = payload.get("message") or ""
            self._send(200, {})

        def delete_tag(self, type: str, repo: str, tag: str, query: dict) -> None:
            found = self._writable(type, repo)
            if found is None:
                return
            if found.tags.pop(tag, None) is None:
                self._error(404, f"Invalid rev id: {tag}", "RevisionNotFound")
                return
            self._send(200, {})

        def refs(self, type: str, repo: str, query: dict) -> None:
            found = self._repo(type, repo)
            if found is None:
                return

            def refs_of(kind: str, names: dict[str, str]) -> list[dict[str, str]]:
                return [{"name": n, "ref": f"refs/{kind}/{n}", "targetCommit": oid} for n, oid in sorted(names.items())]

            self._send(200, {"branches": refs_of("heads", found.branches), "tags": refs_of("tags", found.tags),
                             "converts": [], "pullRequests": []})

        def validate_yaml(self, query: dict) -> None:
            payload = json.loads(self._body())
            content = payload.get("content", "")
            match = re.match(r"^---\n(.*?)\n---\n", content, re.S)
            try:
                data = yaml.safe_load(match.group(1)) if match else {}
            except yaml.YAMLError as error:
                self._send(400, {"errors": [{"message": f"Invalid YAML: {error}"}], "warnings": []})
                return
            warnings = [] if data else [{"message": "empty or missing yaml metadata in repo card"}]
            self._send(200, {"errors": [], "warnings": warnings})

        def preupload(self, type: str, repo: str, revision: str, query: dict) -> None:
            payload = json.loads(self._body())
            found = self._writable(type, repo)
            if found is None:
                return
            oid = hub.resolve(found, revision)
            if oid is None:
                self._error(404, f"Invalid rev id: {revision}", "RevisionNotFound")
                return
            tree, lfs = found.commits[oid], found.lfs_paths[oid]
            files = []
            for item in payload["files"]:
                sample = base64.b64decode(item["sample"])
                mode = "lfs" if item["path"].endswith(".parquet") or b"\0" in sample or \
                    item["size"] > 10 * 1024 * 1024 else "regular"
                existing = tree.get(item["path"])
                remote = None
                if existing is not None:
                    remote = (hashlib.sha256(existing).hexdigest() if item["path"] in lfs
                              else git_blob_id(existing))
                files.append({"path": item["path"], "uploadMode": mode, "shouldIgnore": False, "oid": remote})
            self._send(200, {"files": files, "commitOid": oid})

        def lfs_batch(self, type: str, repo: str, query: dict) -> None:
            payload = json.loads(self._body())
            if self._writable(type, repo) is None:
                return
            objects = []
            for obj in payload["objects"]:
                entry = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
                if obj["oid"] not in hub.lfs:
                    entry["actions"] = {
                        "upload": {"href": f"{hub.storage_url}/lfs-storage/{obj['oid']}"},
                        "verify": {"href": f"{hub.url}/{type}/{repo}.git/info/lfs/objects/verify"},
                    }
                objects.append(entry)
            self._send(200, {"transfer": "basic", "objects": objects},
                       content_type="application/vnd.git-lfs+json")

        def lfs_put(self, oid: str, query: dict) -> None:
            data = self._body()
            if hashlib.sha256(data).hexdigest() != oid:
                self._error(400, "content does not match its sha256")
                return
            hub.lfs[oid] = data
            self._send(200, b"", content_type="text/plain")

        def lfs_verify(self, type: str, repo: str, query: dict) -> None:
            payload = json.loads(self._body())
            if not self._signed_in():
                return
            data = hub.lfs.get(payload["oid"])
            if data is None or len(data) != payload["size"]:
                self._error(404, "object not found or wrong size")
                return
            self._send(200, {})

        def commit(self, type: str, repo: str, revision: str, query: dict) -> None:
            lines = [json.loads(line) for line in self._body().splitlines() if line.strip()]
            found = self._writable(type, repo)
            if found is None:
                return
            if revision not in found.branches:
                self._error(404, f"Invalid rev id: {revision}", "RevisionNotFound")
                return
            head = found.branches[revision]
            tree, lfs = dict(found.commits[head]), set(found.lfs_paths[head])
            header = lines[0]
            if header.get("key") != "header":
                self._error(400, "the first line must be the commit header")
                return
            parent = header["value"].get("parentCommit")
            if parent is not None and parent != head:  # the Hub refuses a commit on a moved branch
                self._error(412, f"A commit has happened since. Please refresh and try again. ({parent} is "
                                 f"not the head of {revision})")
                return
            for line in lines[1:]:
                value = line["value"]
                if line["key"] == "file":
                    tree[value["path"]] = base64.b64decode(value["content"])
                    lfs.discard(value["path"])
                elif line["key"] == "lfsFile":
                    data = hub.lfs.get(value["oid"])
                    if data is None:
                        self._error(400, f"LFS object {value['oid']} was not uploaded")
                        return
                    tree[value["path"]] = data
                    lfs.add(value["path"])
                elif line["key"] == "deletedFile":
                    tree.pop(value["path"], None)
                    lfs.discard(value["path"])
                else:
                    self._error(400, f"unsupported operation {line['key']}")
                    return
            oid = hub.commit(found, revision, tree, lfs, header["value"]["summary"])
            self._send(200, {"commitUrl": f"{hub.url}/{type}/{repo}/commit/{oid}", "commitOid": oid,
                             "pullRequestUrl": None, "success": True})

        # ------------------------------------------------------------- reads

        def repo_info(self, type: str, repo: str, query: dict, revision: str = "main") -> None:
            found = self._repo(type, repo)
            if found is None:
                return
            oid = hub.resolve(found, revision)
            if oid is None:
                self._error(404, f"Invalid rev id: {revision}", "RevisionNotFound")
                return
            self._send(200, {"id": repo, "sha": oid, "private": found.private,
                             "lastModified": "2026-01-01T00:00:00.000Z",
                             "siblings": [{"rfilename": p} for p in sorted(found.commits[oid])]})

        def tree(self, type: str, repo: str, revision: str, query: dict, path: str | None = None) -> None:
            found = self._repo(type, repo)
            if found is None:
                return
            oid = hub.resolve(found, revision)
            if oid is None:
                self._error(404, f"Invalid rev id: {revision}", "RevisionNotFound")
                return
            recursive = query.get("recursive", ["False"])[0].lower() == "true"
            path = (path or "").strip("/")
            prefix = f"{path}/" if path else ""
            entries, folders = [], set()
            for name, data in sorted(found.commits[oid].items()):
                if not name.startswith(prefix):
                    continue
                rest = name[len(prefix):]
                if "/" in rest and not recursive:
                    folders.add(prefix + rest.split("/")[0])
                    continue
                if recursive:
                    parts = rest.split("/")[:-1]
                    folders.update(prefix + "/".join(parts[:i + 1]) for i in range(len(parts)))
                entry: dict[str, Any] = {"type": "file", "path": name, "size": len(data)}
                if name in found.lfs_paths[oid]:
                    sha = hashlib.sha256(data).hexdigest()
                    pointer = _LFS_POINTER.format(oid=sha, size=len(data)).encode()
                    entry["oid"] = git_blob_id(pointer)
                    entry["lfs"] = {"oid": sha, "size": len(data), "pointerSize": len(pointer)}
                else:
                    entry["oid"] = git_blob_id(data)
                entries.append(entry)
            entries += [{"type": "directory", "path": f, "oid": hashlib.sha1(f.encode()).hexdigest(), "size": 0}
                        for f in sorted(folders)]
            self._send(200, entries)

        def resolve_file(self, type: str, repo: str, revision: str, path: str, query: dict) -> None:
            head = self.command == "HEAD"
            found = self._repo(type, repo)
            if found is None:
                return
            oid = hub.resolve(found, revision)
            if oid is None:
                self._error(404, f"Invalid rev id: {revision}", "RevisionNotFound")
                return
            data = found.commits[oid].get(path)
            if data is None:
                self._error(404, f"Entry not found: {path}", "EntryNotFound")
                return
            headers = {"X-Repo-Commit": oid}
            if path in found.lfs_paths[oid]:
                sha = hashlib.sha256(data).hexdigest()
                pointer = _LFS_POINTER.format(oid=sha, size=len(data)).encode()
                headers.update({"ETag": f'"{git_blob_id(pointer)}"', "X-Linked-Etag": f'"{sha}"',
                                "X-Linked-Size": str(len(data)), "Location": f"{hub.storage_url}/lfs-storage/{sha}"})
                self._send(302, b"", headers=headers, head=head, content_type="text/plain")
                return
            headers["ETag"] = f'"{git_blob_id(data)}"'
            self._send(200, data, headers=headers, head=head, content_type="application/octet-stream")

        def lfs_get(self, oid: str, query: dict) -> None:
            data = hub.lfs.get(oid)
            if data is None:
                self._error(404, "no such object")
                return
            self._send(200, data, head=self.command == "HEAD", content_type="application/octet-stream",
                       headers={"ETag": f'"{oid}"'})

    ROUTES = [
        (("POST", r"/api/repos/create"), "create_repo"),
        (("POST", r"/api/validate-yaml"), "validate_yaml"),
        (("POST", rf"/api/{repo_part}/branch/(?P<branch>.+)"), "create_branch"),
        (("POST", rf"/api/{repo_part}/tag/(?P<revision>[^/]+)"), "create_tag"),
        (("DELETE", rf"/api/{repo_part}/tag/(?P<tag>[^/]+)"), "delete_tag"),
        (("GET", rf"/api/{repo_part}/refs"), "refs"),
        (("POST", rf"/api/{repo_part}/preupload/(?P<revision>[^/]+)"), "preupload"),
        (("POST", rf"/api/{repo_part}/commit/(?P<revision>[^/]+)"), "commit"),
        (("POST", rf"/{repo_part}\.git/info/lfs/objects/batch"), "lfs_batch"),
        (("POST", rf"/{repo_part}\.git/info/lfs/objects/verify"), "lfs_verify"),
        (("PUT", r"/lfs-storage/(?P<oid>[0-9a-f]{64})"), "lfs_put"),
        (("GET", r"/lfs-storage/(?P<oid>[0-9a-f]{64})"), "lfs_get"),
        (("HEAD", r"/lfs-storage/(?P<oid>[0-9a-f]{64})"), "lfs_get"),
        (("GET", rf"/api/{repo_part}/revision/(?P<revision>[^/]+)"), "repo_info"),
        (("GET", rf"/api/{repo_part}"), "repo_info"),
        (("GET", rf"/api/{repo_part}/tree/(?P<revision>[^/]+)(?:/(?P<path>.*))?"), "tree"),
        (("GET", rf"/{repo_part}/resolve/(?P<revision>[^/]+)/(?P<path>.+)"), "resolve_file"),
        (("HEAD", rf"/{repo_part}/resolve/(?P<revision>[^/]+)/(?P<path>.+)"), "resolve_file"),
    ]
    return Handler
