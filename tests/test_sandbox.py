"""The sandbox's command lines and options, and its watchdog, without running a kernel."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from processes import alive, descendants  # tests/ is on sys.path under pytest

from junobench.cli import main
from junobench.envs.sandbox import (
    SANDBOX_SETTINGS,
    Sandbox,
    bwrap_argv,
    bwrap_problem,
    confined_environ,
    container_argv,
    hand_over,
    limit_reached,
    require_sandbox,
    sandbox_uid,
)
from junobench.errors import JunoBenchError


def test_the_container_command_has_no_network_a_read_only_root_and_the_limits():
    argv = container_argv("podman", ["/env/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                          Sandbox("podman", memory=2 << 30, processes=64, image="img:1"), cwd="/w/case",
                          writable=["/w", "/rt"], name="junobench-x", status="/rt/limit")
    assert argv[:3] == ["podman", "run", "--rm"]
    assert argv[argv.index("--network") + 1] == "none"
    assert "--read-only" in argv and argv[argv.index("--memory") + 1] == str(2 << 30)
    assert argv[argv.index("--pids-limit") + 1] == "64"
    assert "/w:/w:rw" in argv and "/rt:/rt:rw" in argv
    assert argv[argv.index("--workdir") + 1] == "/w/case"
    image = argv.index("img:1")
    assert argv[image + 1] == "/opt/junobench-env/bin/python" and argv[-5:] == [
        "/opt/junobench-env/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    on = container_argv("docker", ["p"], Sandbox("docker", network=True), cwd="/w", writable=["/w"], name="n",
                        status="/s")
    assert on[on.index("--network") + 1] == "bridge"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_bwrap_shows_only_what_it_binds(tmp_path):
    import sys

    argv = bwrap_argv(["true"], Sandbox("bwrap"), python=sys.executable, cwd=str(tmp_path), writable=[str(tmp_path)],
                      runtime=str(tmp_path))
    binds = [argv[i + 1] for i, a in enumerate(argv) if a == "--bind"]
    assert binds == [str(tmp_path)]
    assert "--share-net" not in argv and "--die-with-parent" in argv and "--unshare-all" in argv
    remounted = [argv[i + 1] for i, a in enumerate(argv) if a == "--remount-ro"]
    assert remounted == ["/dev", "/"]  # /dev (a tmpfs) and the root: read-only
    ro = [argv[i + 2] for i, a in enumerate(argv) if a == "--ro-bind"]
    present = {p for p in ("/proc/sys", "/proc/sysrq-trigger", "/proc/kcore") if os.path.exists(p)}
    assert "/proc/sys" in present and present <= set(ro)
    networked = bwrap_argv(["true"], Sandbox("bwrap", network=True), python=sys.executable, cwd=str(tmp_path),
                           writable=[], runtime=str(tmp_path))
    assert "--share-net" in networked


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_matplotlib_s_font_list_is_built_once_and_bound_read_only(tmp_path, monkeypatch):
    import sys

    from junobench.envs import sandbox

    pytest.importorskip("matplotlib")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sandbox.font_cache.cache_clear()
    try:
        found = sandbox.font_cache(sys.executable)
        assert [f.name for f in found] and all(f.name.startswith("fontlist-") for f in found)
        assert all(tmp_path / "cache" / "junobench" / "sandbox" in f.parents for f in found)
        argv = bwrap_argv(["true"], Sandbox("bwrap"), python=sys.executable, cwd=str(tmp_path), writable=[],
                          runtime=str(tmp_path))
        bound = argv.index(str(found[0]))
        assert argv[bound - 1] == "--ro-bind" and argv[bound + 1] == f"{sandbox.MATPLOTLIB_CACHE}/{found[0].name}"
    finally:
        sandbox.font_cache.cache_clear()


def test_a_confined_kernel_gets_only_the_allowlisted_variables():
    env = {"PATH": "/bin", "DATABASE_URL": "postgres://u:p@h/db", "LC_ALL": "C", "OMP_NUM_THREADS": "4", "X": "1",
           "JUPYTER_GATEWAY_HEADERS": '{"Authorization": "token t"}', "LANG": "de_DE.UTF-8"}
    # the locale and the thread counts are junobench's own, whatever the caller's are
    assert confined_environ(env) == {"PATH": "/bin", **SANDBOX_SETTINGS}
    assert SANDBOX_SETTINGS["OMP_NUM_THREADS"] == "1" and SANDBOX_SETTINGS["LANG"] == "C.UTF-8"
    named = confined_environ(env, keep=["X", "LC_ALL", "OMP_NUM_THREADS", "JUPYTER_GATEWAY_HEADERS"])
    assert named["X"] == "1" and named["LC_ALL"] == "C" and named["OMP_NUM_THREADS"] == "4"
    assert named["JUPYTER_GATEWAY_HEADERS"] == env["JUPYTER_GATEWAY_HEADERS"]


def test_no_sandbox_refuses_untrusted_notebooks(monkeypatch):
    import junobench.envs.sandbox as sandbox

    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bubblewrap (bwrap) is not installed")
    with pytest.raises(JunoBenchError, match="no sandbox") as caught:
        require_sandbox(Sandbox(), trusted=False)
    assert "apt-get install bubblewrap" in str(caught.value.problem_.hint)
    assert require_sandbox(Sandbox(), trusted=True).kind == "none"
    assert require_sandbox(Sandbox("none"), trusted=False).kind == "none"
    with pytest.raises(JunoBenchError, match="--sandbox bwrap cannot run here"):
        Sandbox("bwrap").resolved()


def test_bad_limits_are_one_error(capsys):
    assert main(["verify", "--source", "sample", "--memory", "lots"]) == 1
    assert "error: cannot read the size 'lots'" in capsys.readouterr().err
    assert main(["verify", "--source", "sample", "--max-processes", "2"]) == 1
    assert "too few" in capsys.readouterr().err


@pytest.mark.kernel
def test_a_real_container_run(tmp_path):
    engine = shutil.which("docker") or shutil.which("podman")
    if engine is None:
        pytest.skip("no container engine (docker, podman) installed")
    info = subprocess.run([engine, "info"], capture_output=True, timeout=60, check=False)
    if info.returncode != 0:
        pytest.skip(f"`{engine} info` failed: the engine does not answer")
    from junobench.verify import verify

    report = verify(["NBspecific_2"], "sample", sandbox=Sandbox(engine.rsplit("/", 1)[-1]), progress=False)
    assert report["NBspecific_2"].sandbox == f"{engine.rsplit('/', 1)[-1]}, network off"


@pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap sandbox: {bwrap_problem()}")
def test_a_kernel_that_grows_and_dies_between_two_looks_ran_out_of_memory(tmp_path):
    # The watchdog is stopped while its "kernel" fills 232 MiB of a 256 MiB limit and exits
    # with an error: its data size at the last look was small, only the peak the system
    # reports when it ends can say it ran out of memory (as a kernel that dies of a failed
    # allocation on a busy machine does).
    work, runtime = tmp_path / "work", tmp_path / "runtime"
    work.mkdir()
    runtime.mkdir()
    go, grown = work / "go", work / "grown"
    child = (f"import os, time\nwhile not os.path.exists({str(go)!r}):\n    time.sleep(0.01)\n"
             f"hog = bytearray(232 << 20)\nopen({str(grown)!r}, 'w').close()\nos._exit(1)\n")
    sandbox = Sandbox("bwrap", memory=256 << 20, processes=0)
    uid = sandbox_uid(sandbox)
    argv = bwrap_argv([sys.executable, "-c", child], sandbox, python=sys.executable, cwd=str(work),
                      writable=[str(work)], runtime=str(runtime), fonts=False, status=str(runtime / "limit"), uid=uid)
    hand_over([work], uid)
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while len(below := descendants(process.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)  # bubblewrap, the sandbox's PID 1, the "kernel"
        kernel = below[-1]
        os.kill(process.pid, signal.SIGSTOP)  # the watchdog, outside the sandbox
        go.touch()
        while alive(kernel) and time.monotonic() < deadline:  # until a zombie
            time.sleep(0.02)
        assert grown.exists(), "the child did not get its memory"
        os.kill(process.pid, signal.SIGCONT)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert b"the kernel ended" in stderr, stderr
    assert (runtime / "limit").read_text().strip() == "memory"
    assert limit_reached(runtime, sandbox).startswith("out of memory")


@pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap sandbox: {bwrap_problem()}")
def test_the_report_says_how_the_sandbox_applied_its_limits_and_who_the_notebook_is():
    saved = Sandbox("bwrap").resolved().to_json()
    enforcement = saved["enforcement"]
    assert set(enforcement) == {"limits", "identity", "seccomp", "proc"}
    assert "watchdog outside the sandbox" in enforcement["limits"] and "no cgroup: " in enforcement["limits"]
    if os.geteuid() == 0:
        assert "an unprivileged uid of its own outside" in enforcement["identity"]
    else:
        assert f"uid {os.getuid()} outside" in enforcement["identity"]
    assert enforcement["seccomp"].startswith("on: ")
    assert "/proc/sys" in enforcement["proc"] and "/proc/kcore" in enforcement["proc"]
    assert "enforcement" not in Sandbox("none").to_json()


def test_as_root_every_sandbox_gets_an_unprivileged_uid_of_its_own(monkeypatch):
    import junobench.envs.sandbox as sandbox

    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    uids = {sandbox_uid(Sandbox("bwrap")) for _ in range(5)}
    assert len(uids) == 5 and all(uid is not None and 1 << 30 <= uid < 1 << 31 for uid in uids)
    assert sandbox_uid(Sandbox("none")) is None
    docker = sandbox_uid(Sandbox("docker"))
    assert docker is not None and docker not in uids and 1 << 30 <= docker < 1 << 31
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 1000)
    assert sandbox_uid(Sandbox("bwrap")) is None and sandbox_uid(Sandbox("podman")) is None


def test_verify_in_a_container_asks_the_engine_for_no_root_no_suid_and_no_network(tmp_path, monkeypatch, capsys):
    # No engine answers here: a stand-in `docker` on PATH says it runs (`docker info`) and
    # records the command line junobench hands it for the kernel, then fails as a dead
    # daemon would. What the engine is asked is the container's whole confinement.
    calls = tmp_path / "calls"
    fake = tmp_path / "bin" / "docker"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\nprintf '%s\\0' \"$@\" >> {calls}\nprintf '\\n' >> {calls}\n"
                    '[ "$1" = info ] && exit 0\nexit 1\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    code = main(["verify", "NBspecific_2", "--source", "sample", "--sandbox", "docker", "--no-progress",
                 "--memory", "1GiB", "--format", "json"])
    assert code == 1
    runs = [line.split("\0")[:-1] for line in calls.read_text().splitlines() if line.startswith("run\0")]
    assert runs, calls.read_text()
    argv = runs[0]
    user = argv[argv.index("--user") + 1]
    if os.geteuid() == 0:  # never the host's root inside the container
        assert int(user.split(":")[0]) >= 1 << 30, user
    else:
        assert user == f"{os.getuid()}:{os.getgid()}"
    assert argv[argv.index("--network") + 1] == "none" and "--read-only" in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL" and "no-new-privileges" in argv
    tmp = argv[argv.index("--tmpfs") + 1]
    assert tmp.startswith("/tmp:") and {"nosuid", "nodev", f"size={1 << 30}"} <= set(tmp[5:].split(","))
    assert argv[argv.index("--shm-size") + 1] == str(1 << 30)
    assert argv[argv.index("--memory") + 1] == str(1 << 30)
