"""Whether a Ray cluster answers at an address, and if not why: asked before ``ray.init``.

``ray.init`` retries an address that refuses it, or does not answer, for minutes, then says
only that it failed. :func:`probe` asks within :data:`CONNECT_TIMEOUT` seconds and names
the cause in one line: the connection refused, an unknown host, no answer; something
there that is not a Ray cluster (not gRPC, or no Ray head behind it); token
authentication required, or a token the cluster refuses; a Ray or Python version other
than the cluster's. ``ray.init`` then joins a cluster known to be there.

>>> import socket
>>> held = socket.socket()                 # a port held, and nothing listens on it
>>> held.bind(("127.0.0.1", 0))
>>> probe(f"127.0.0.1:{held.getsockname()[1]}")     # doctest: +ELLIPSIS
Traceback (most recent call last):
junobench.errors.JunoBenchError: 127.0.0.1:...: cannot join the Ray cluster: connection refused (...)
>>> held.close()
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from junobench.errors import JunoBenchError
from junobench.safety.text import first_line

#: Seconds the probe of a cluster's address may take in all (separate from the start-up limit).
CONNECT_TIMEOUT = 10.0

#: What a gRPC client sends first (HTTP/2's connection preface, then an empty SETTINGS frame).
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_SETTINGS = 4  # the frame type an HTTP/2 server answers the preface with

TOKENS = "RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token (`ray get-auth-token` on the head)"

T = TypeVar("T")


def resolve(address: str | None) -> str | None:
    """The ``host:port`` of the cluster ``ray.init(address)`` would join (``RAY_ADDRESS``,
    ``auto``: the ``ray start`` cluster of this machine), None when it would start a local
    instance (or, for ``ray://``, the address itself)."""
    if address is not None and address.startswith("ray://"):
        return address
    from ray._private import services

    try:
        return services.canonicalize_bootstrap_address(address)  # type: ignore[arg-type]
    except Exception as error:  # no cluster for "auto", an address that does not parse
        where = address or os.environ.get("RAY_ADDRESS") or "auto"
        text = " ".join(str(error).split()) or type(error).__name__
        raise JunoBenchError(f"cannot join the Ray cluster: {text}", file=where,
                             hint="check --ray-address (host:port, ray://head:10001 or auto)") from None


def split(address: str) -> tuple[str, int]:
    """``host:port`` (``ray://host:port``, ``[v6]:port``) as host and port."""
    rest = address.split("://", 1)[1] if "://" in address else address
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        raise JunoBenchError("cannot join the Ray cluster: the address is not host:port", file=address,
                             hint="check --ray-address (host:port, ray://head:10001 or auto)")
    return host.strip("[]"), int(port)


def probe(target: str, given: str | None = None, *, timeout: float = CONNECT_TIMEOUT) -> None:
    """Raise a :class:`JunoBenchError` of one line unless a Ray cluster of this process's
    Ray and Python versions, which accepts this process's token, answers at ``target``
    (``host:port`` or ``ray://host:port``: what :func:`resolve` made of the ``given``
    address), within about ``timeout`` seconds."""
    host, port = split(target)
    shown = target if given in (None, "auto", target) else f"{given} ({target})"
    reach(shown, host, port, timeout / 3)
    if target.startswith("ray://") or os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        return  # Ray Client checks its own versions; TLS hides HTTP/2 from a plain look
    speaks_grpc(shown, host, port, timeout / 3)
    # as ray.init: a token found on disk turns authentication on only for a cluster found here
    found = given in (None, "auto") and not os.environ.get("RAY_ADDRESS")
    metadata = within(timeout / 3, lambda: _cluster_metadata(target, shown, timeout / 3, found), shown)
    compare_versions(metadata, shown)


def _fail(address: str, what: str, hint: str) -> JunoBenchError:
    return JunoBenchError(f"cannot join the Ray cluster: {what}", file=address, hint=hint)


def reach(address: str, host: str, port: int, timeout: float) -> None:
    """Open a TCP connection to ``host:port``: refused, unknown or silent is an error."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except ConnectionRefusedError:
        raise _fail(address, "connection refused", "nothing listens there: check --ray-address, and that "
                    "the cluster's head runs (`ray start --head` prints its address)") from None
    except socket.gaierror as error:
        raise _fail(address, f"unknown host {host!r} ({error.strerror})", "check --ray-address") from None
    except TimeoutError:
        raise _fail(address, f"no answer within {timeout:.0f} s", "check --ray-address, and that no "
                    "firewall drops the connection") from None
    except OSError as error:
        raise _fail(address, error.strerror or str(error), "check --ray-address") from None


def speaks_grpc(address: str, host: str, port: int, timeout: float) -> None:
    """Whatever listens at ``host:port`` answers HTTP/2's preface as a gRPC server does
    (Ray's head is one); anything else is not a Ray cluster."""
    first = b""
    try:
        with socket.create_connection((host, port), timeout=timeout) as connection:
            connection.sendall(_PREFACE)
            while len(first) < 9:
                data = connection.recv(9 - len(first))
                if not data:
                    break
                first += data
            if len(first) == 9 and first[3] != _SETTINGS:  # not HTTP/2: the rest of its first line, to show
                connection.settimeout(0.5)
                with contextlib.suppress(OSError):
                    while b"\n" not in first and len(first) < 80 and (data := connection.recv(80 - len(first))):
                        first += data
    except TimeoutError:
        raise _fail(address, f"not a Ray cluster (it accepts connections but does not answer gRPC within "
                    f"{timeout:.0f} s)", "check the port: a Ray head listens on 6379 unless told "
                    "otherwise") from None
    except OSError as error:
        raise _fail(address, f"not a Ray cluster ({error.strerror or error})", "check --ray-address") from None
    if len(first) < 9 or first[3] != _SETTINGS:
        shown = first[:80].decode("latin-1").splitlines()[0].strip() if first.strip() else "nothing"
        raise _fail(address, f"not a Ray cluster (it answers {shown!r}, not gRPC)",
                    "check the port: a Ray head listens on 6379 unless told otherwise")


def within(seconds: float, call: Callable[[], T], address: str) -> T:
    """``call()`` in a thread of its own, given ``seconds`` (Ray's client may retry longer)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = call()
        except BaseException as error:  # handed to the caller
            box["error"] = error

    thread = threading.Thread(target=run, name="junobench-ray-probe", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise _fail(address, f"not a Ray cluster (no Ray head answered within {seconds:.0f} s)",
                    "check the port: a Ray head listens on 6379 unless told otherwise")
    if "error" in box:
        raise box["error"]
    return box["result"]  # type: ignore[no-any-return]


def _cluster_metadata(target: str, address: str, timeout: float, found: bool) -> dict[str, Any]:
    """The versions the cluster's head at ``target`` recorded (Ray's own GCS client, token
    authentication set up as ``ray.init`` does for a cluster ``found`` here or named)."""
    try:
        import ray.exceptions
        from ray._common.usage.usage_constants import CLUSTER_METADATA_KEY
        from ray._private.authentication.authentication_token_setup import (
            ensure_token_if_auth_enabled,
            maybe_enable_token_auth_if_token_available,
        )
        from ray._raylet import InnerGcsClient  # type: ignore[attr-defined]
    except ImportError:  # another Ray than the one this was written for: ray.init says it all
        return {}
    try:
        if found:
            maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
        ensure_token_if_auth_enabled(None, create_token_if_missing=False)
    except RuntimeError:  # token authentication on, no token at all
        raise _fail(address, "token authentication is on (auth required), and no token is found",
                    f"put the cluster's token in {TOKENS}") from None
    try:
        client = InnerGcsClient.standalone(target, None, int(timeout * 1000 / 3))
        raw = client.internal_kv_get(CLUSTER_METADATA_KEY, b"cluster", timeout=timeout / 3)
    except ray.exceptions.AuthenticationError:
        if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
            what = "token authentication is on and the cluster refuses this process's token"
        else:
            what = "the cluster requires token authentication (auth required), which is off here"
        raise _fail(address, what, f"set RAY_AUTH_MODE=token and the cluster's token in {TOKENS}") from None
    except ray.exceptions.RayError as error:
        raise _fail(address, f"not a Ray cluster (no Ray head answered: {first_line(error, 200)})",
                    "check the port: a Ray head listens on 6379 unless told otherwise") from None
    if not raw:
        raise _fail(address, "not a Ray cluster (its head holds no cluster metadata)", "check --ray-address")
    try:
        metadata: dict[str, Any] = json.loads(raw)
    except ValueError:
        raise _fail(address, "not a Ray cluster (its head's cluster metadata is not JSON)",
                    "check --ray-address") from None
    return metadata


def compare_versions(metadata: dict[str, Any], address: str) -> None:
    """A cluster whose Ray or Python version (major.minor.patch, as Ray requires) is not
    this process's is refused, naming both."""
    if not metadata:
        return
    import platform

    import ray

    theirs = (str(metadata.get("ray_version")), str(metadata.get("python_version")))
    ours = (ray.__version__, platform.python_version())
    level = os.environ.get("RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL", "patch")
    python_ok = (theirs[1] == ours[1] if level != "minor"
                 else theirs[1].split(".")[:2] == ours[1].split(".")[:2])
    if theirs[0] != ours[0] or not python_ok:
        raise _fail(address, f"version mismatch: the cluster runs Ray {theirs[0]} on Python {theirs[1]}, "
                    f"this machine Ray {ours[0]} on Python {ours[1]}",
                    "install the cluster's versions of Ray and Python here, or join another cluster")

