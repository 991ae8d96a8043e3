"""Pinned environments for real: env create/show, kernels in another interpreter, the
mismatch report. One environment (the sample's) is made for the whole session and reused
across runs (tests/conftest.py: shared_environment)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from junobench.envs.check import kernel_environment
from junobench.envs.create import MANIFEST, create_environment, read_manifest, show_environment
from junobench.envs.environment import packaged
from junobench.envs.installer import current_python, python_version
from junobench.envs.kernel import env_kernel, kernel_env, own_kernel, start_kernel
from junobench.errors import JunoBenchError
from junobench.selection import select
from junobench.verify import verify
from junobench.verify.runner import run_sync
from tests.cli_run import run_cli
from tests.conftest import shared_environment

pytestmark = pytest.mark.kernel


def test_the_sample_environment_holds_exactly_the_pinned_selection(sample_env, capsys):
    import junobench

    needed = {r for c in junobench.load("sample") for r in c["requirements"]}
    ipykernel = f"ipykernel=={packaged().pin('ipykernel')}"
    assert sample_env.requirements == sorted(needed | {ipykernel})
    assert {"numpy==1.26.4", "pandas==2.1.4", "scikit-learn==1.2.2", "matplotlib==3.7.1",
            "seaborn==0.12.2", "statsmodels==0.14.0"} <= set(sample_env.requirements)
    manifest, rows, version = show_environment(sample_env.path)
    assert [r.status for r in rows] == ["ok"] * len(rows)
    assert manifest["environment"]["name"] == "junobench-2025"
    assert version.startswith(manifest["python"]["used"])
    # a kernelspec inside the environment, pointing at its interpreter
    specs = list((sample_env.path / "share" / "jupyter" / "kernels").glob("junobench-*/kernel.json"))
    assert len(specs) == 1 and json.loads(specs[0].read_text())["argv"][0] == str(sample_env.python)
    code, out, _ = run_cli(capsys, "env", "show", str(sample_env.path))
    assert code == 0 and "pandas        2.1.4   2.1.4      ok" in out


def test_the_same_selection_reuses_the_environment(sample_env, capsys):
    stamp = (sample_env.path / MANIFEST).stat().st_mtime_ns
    code, out, err = run_cli(capsys, "env", "create", str(sample_env.path), "--source", "sample")
    assert code == 0 and out == "" and err.startswith("reused: ")
    assert (sample_env.path / MANIFEST).stat().st_mtime_ns == stamp


def test_a_kernel_really_runs_in_the_environments_interpreter(sample_env, tmp_path):
    target = env_kernel(sample_env.path)
    assert target.python != sys.executable

    async def ask() -> dict[str, str]:
        kernel = await start_kernel(target, cwd=tmp_path, env=kernel_env())
        try:
            msg_id = kernel.kc.execute("import sys, json, numpy, pandas, os\n"
                                       "print(json.dumps({'exe': sys.executable, 'numpy': numpy.__version__,"
                                       " 'pandas': pandas.__version__, 'cwd': os.getcwd(),"
                                       " 'python': '%d.%d' % sys.version_info[:2]}))")
            out = ""
            while True:
                msg = await kernel.kc.get_iopub_msg(timeout=60)
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                if msg["msg_type"] == "stream":
                    out += msg["content"]["text"]
                if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                    return json.loads(out)
        finally:
            await kernel.shutdown()

    seen = run_sync(ask())
    assert seen["exe"] == str(sample_env.python)
    assert (seen["numpy"], seen["pandas"]) == ("1.26.4", "2.1.4")
    assert seen["python"] == read_manifest(sample_env.path)["python"]["used"]
    assert Path(seen["cwd"]) == tmp_path
    import numpy
    import pandas

    assert (numpy.__version__, pandas.__version__) != ("1.26.4", "2.1.4")  # junobench's own differ


def test_verify_in_the_environment_records_it(sample_env, tmp_path, capsys):
    report_file = tmp_path / "r.json"
    code, out, err = run_cli(capsys, "verify", "pandas_2", "NBspecific_2", "--source", "sample",
                             "--env", str(sample_env.path), "--jobs", "2", "--report", str(report_file),
                             "--no-progress")
    assert code == 0, out + err
    report = json.loads(report_file.read_text())
    env = report["environment"]
    assert env["env_dir"] == str(sample_env.path) and env["executable"] == str(sample_env.python)
    assert env["packages"]["pandas"] == {"pinned": "2.1.4", "installed": "2.1.4"}
    assert env["unmet"] == []
    assert all(case["mismatches"] == [m for m in [env["python_mismatch"]] if m]
               for case in report["cases"].values())
    assert f"kernels ran in junobench-2025 at {sample_env.path}" in err


def test_without_an_environment_the_report_names_the_unmet_pins(tmp_path):
    report = verify(["pandas_2"], "sample", jobs=1, progress=False)
    env = report.environment
    assert env["env_dir"] is None and env["executable"] == own_kernel().python
    import pandas

    assert env["packages"]["pandas"] == {"pinned": "2.1.4", "installed": pandas.__version__}
    assert "pandas" in env["unmet"]
    assert f"pandas {pandas.__version__} where the benchmark pins 2.1.4" in report["pandas_2"].mismatches
    assert "not as the benchmark pins" in report.summary()


def test_a_selection_of_reference_cases_installs_only_their_pins(reference_snapshot, sample_env, capsys):
    import junobench

    chosen = select(reference_snapshot, filters={"library": ["sklearn", "pandas"]})
    assert len(chosen.cases) == 30
    records = junobench.load(reference_snapshot, library=["sklearn", "pandas"])
    ipykernel = f"ipykernel=={packaged().pin('ipykernel')}"
    assert chosen.requirements == sorted({r for c in records for r in c["requirements"]} | {ipykernel})
    assert not {r.split("==")[0] for r in chosen.requirements} & {"torch", "torchvision", "qiskit"}
    # installed for real: a sklearn and a pandas case, exactly their pins
    made = shared_environment("reference-sklearn-pandas", reference_snapshot, case_ids=["sklearn_8", "pandas_3"])
    assert made.manifest["cases"] == ["sklearn_8", "pandas_3"]
    assert made.requirements == [ipykernel, "numpy==1.26.4", "pandas==2.1.4", "scikit-learn==1.2.2"]
    _, rows, _ = show_environment(made.path)
    assert {r.name: r.installed for r in rows} == {r.split("==")[0]: r.split("==")[1]
                                                    for r in made.requirements}
    from junobench.envs.installer import installed_versions

    installed = installed_versions(made.python)
    assert not set(installed) & {"matplotlib", "seaborn", "statsmodels", "tensorflow"}
    assert installed["scipy"] == packaged().pin("scipy")  # a dependency, held to the lock


def test_another_python_than_the_environments_is_said_and_recorded(tmp_path, capsys):
    here = current_python()
    version = python_version(here)
    assert version is not None and version != "3.10", "the suite runs on junobench's Python (3.11+)"
    made = shared_environment("sample-own-python", case_ids=["NBspecific_2"], python=str(here))
    assert made.python_note and f"Python {version}" in made.python_note and "3.10" in made.python_note
    manifest = read_manifest(made.path)
    assert manifest["python"] == {"wanted": "3.10", "used": version, "executable": str(here),
                                  "note": made.python_note}
    found = kernel_environment(env_kernel(made.path), packaged())
    assert found.python_mismatch() == f"Python {version} where the benchmark runs 3.10"


def test_a_folder_that_is_not_an_environment_is_refused(tmp_path, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    code, _, err = run_cli(capsys, "env", "create", str(folder), "NBspecific_2", "--source", "sample")
    assert code == 1 and err.startswith("error: ") and "not a junobench environment" in err
    assert (folder / "notes.txt").read_text() == "keep me" and len(list(folder.iterdir())) == 1
    code, _, err = run_cli(capsys, "verify", "NBspecific_2", "--source", "sample", "--env", str(folder))
    assert code == 1 and "not a junobench environment" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("manifest", [
    "[" * 100_000 + "]" * 100_000,
    '{"environment": {}, "requirements": []}',
    '{"environment": {"name": {"a": 1}}, "python": {"wanted": "3.10", "used": "3.10"}, "requirements": []}',
    '{"environment": {"name": "x"}, "requirements": []}',
    '{"environment": {"name": "x"}, "python": {"wanted": "3.10", "used": "3.10"}, "requirements": [null]}',
], ids=["nested", "no-name", "name-object", "no-python", "requirement-null"])
def test_a_manifest_of_another_shape_is_one_error(tmp_path, capsys, manifest):
    folder = tmp_path / "env"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").symlink_to(sys.executable)
    (folder / MANIFEST).write_text(manifest)
    for argv in (["env", "show", str(folder)], ["verify", "NBspecific_2", "--source", "sample", "--env", str(folder)]):
        code, _, err = run_cli(capsys, *argv)
        assert code == 1 and err.startswith("error: ") and len(err.splitlines()) == 1, err
        assert f"{MANIFEST}: not a junobench environment" in err


@pytest.fixture(scope="module")
def previous_env(tmp_path_factory) -> Path:
    """An environment of NBspecific_2 on junobench's Python at ``<folder>/env``, made once
    for the module, that the create tests below replace or fail to replace (each leaves it
    as it was); made where no bytecode is written (``PYTHONDONTWRITEBYTECODE``), as the
    compile test needs."""
    target = tmp_path_factory.mktemp("previous") / "env"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONDONTWRITEBYTECODE", "1")
        create_environment(target, select("sample", ["NBspecific_2"]), python=str(current_python()))
    return target


def test_a_failed_create_keeps_the_previous_environment(previous_env, monkeypatch):
    from junobench.envs import create as create_module

    target = previous_env
    before = read_manifest(target)

    def broken(*args, **kwargs):
        raise JunoBenchError("installing junobench-requirements.txt with uv failed: no network")

    monkeypatch.setattr(create_module, "install", broken)
    with pytest.raises(JunoBenchError, match="no network"):
        create_environment(target, select("sample", ["pandas_2"]), python=str(current_python()))
    assert read_manifest(target) == before and (target / "bin" / "python").is_file()
    assert [p.name for p in target.parent.iterdir()] == ["env"]  # nothing half-made left beside it


def test_a_create_killed_while_installing_leaves_the_previous_environment(previous_env):
    """SIGKILL while the new environment is half-built in place: the next create puts the
    previous one back (and reuses it), and leaves nothing beside it."""
    import os
    import signal
    import subprocess
    import time

    target = previous_env
    python = str(current_python())
    before = read_manifest(target)
    script = ("import sys; from junobench.envs.create import create_environment; "
              "from junobench.selection import select; "
              "create_environment(sys.argv[1], select('sample', ['pandas_2']), python=sys.argv[2])")
    run = subprocess.Popen([sys.executable, "-c", script, str(target), python])
    try:
        deadline = time.monotonic() + 120
        while not ((target / "pyvenv.cfg").is_file() and any(target.parent.glob(".env.*.old"))):
            assert run.poll() is None and time.monotonic() < deadline, "create finished before the kill"
            time.sleep(0.05)
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
    finally:
        if run.poll() is None:
            run.kill()
    assert not (target / MANIFEST).exists()  # killed half-way: a half-built environment
    while True:  # an installer the kill left running holds the folder's lock until it ends
        try:
            again = create_environment(target, select("sample", ["NBspecific_2"]), python=python)
            break
        except JunoBenchError as error:
            assert "another `env create`" in str(error) and time.monotonic() < deadline, error
            time.sleep(0.2)
    assert again.reused and read_manifest(target) == before
    assert [p.name for p in target.parent.iterdir()] == ["env"]


def test_a_tool_outliving_a_killed_create_keeps_the_folder_locked(tmp_path):
    """The tools a create runs inherit its lock: after the create is killed, a tool still
    running (an installer writing into the folder) keeps other creates out until it ends,
    so that none cleans the folder up under it."""
    import signal
    import subprocess
    import time

    target = tmp_path / "env"
    marker = tmp_path / "tool-started"
    script = ("import sys; from pathlib import Path; from junobench.envs.create import _building; "
              "from junobench.envs.installer import run\n"
              "with _building(Path(sys.argv[1])):\n"
              "    run(['sh', '-c', 'sleep 4 & touch \"$0\"', sys.argv[2]], what='a long tool')\n"
              "    import time; time.sleep(60)")
    create = subprocess.Popen([sys.executable, "-c", script, str(target), str(marker)])
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert create.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        create.send_signal(signal.SIGKILL)
        create.wait()
    finally:
        if create.poll() is None:
            create.kill()
    from junobench.envs.create import _building  # the lock every create takes first

    with pytest.raises(JunoBenchError, match="another `env create` is making an environment here"), \
            _building(target):
        pass
    while True:  # the tool ends within seconds: the folder is free again
        try:
            with _building(target):
                break
        except JunoBenchError:
            assert time.monotonic() < deadline
            time.sleep(0.2)


def test_unknown_cases_and_bad_selections_are_one_error(capsys, tmp_path):
    code, _, err = run_cli(capsys, "env", "create", str(tmp_path / "e"), "pandas_9", "--source", "sample")
    assert code == 1 and "no case 'pandas_9'" in err and len(err.splitlines()) == 1
    code, _, err = run_cli(capsys, "env", "create", str(tmp_path / "e"), "pandas_1", "--source", "sample",
                           "--all")
    assert code == 1 and "--all" in err
    assert not (tmp_path / "e").exists()
    code, _, err = run_cli(capsys, "env", "show", str(tmp_path))
    assert code == 1 and "not a junobench environment" in err


def test_the_sample_depends_on_its_environment(sample_env, tmp_path):
    """Two sample cases use what NumPy 2 and pandas 3 removed: they pass in the pinned
    environment and fail in junobench's own, the report naming the unmet pins."""
    import numpy
    import pandas

    cases = ["numpy_1", "matplotlib_1"]
    pinned = verify(cases, "sample", jobs=2, progress=False, env=sample_env.path)
    assert pinned.ok, [c.row() for c in pinned]
    own = verify(cases, "sample", jobs=2, progress=False)
    numpy_1, matplotlib_1 = own["numpy_1"], own["matplotlib_1"]
    assert numpy_1.status == matplotlib_1.status == "failed"
    assert "`np.NaN` was removed in the NumPy 2.0 release" in numpy_1.reproduced.reason
    assert "unexpected keyword argument 'method'" in matplotlib_1.fixed.reason
    assert f"numpy {numpy.__version__} where the benchmark pins 1.26.4" in numpy_1.mismatches
    assert f"pandas {pandas.__version__} where the benchmark pins 2.1.4" in matplotlib_1.mismatches
    assert numpy_1.row()["environment"] == numpy_1.mismatches  # shown in the table of a failure
    # runtime information in junobench's own interpreter fails the same way, and says why
    from junobench.runtime import runtime_info

    record = runtime_info(["numpy_1"], "sample", versions=["reproduced"], progress=False)[0]
    assert record["status"] == "failed" and "numpy" in record["problem"] and "1.26.4" in record["problem"]


def test_checkout_with_env_gives_the_cases_environment(previous_env, tmp_path, capsys):
    """The environment of the checked-out cases, read from the checkout: here the one
    ``previous_env`` holds for the same case, which is reused (making one: the tests above)."""
    dest, env_dir = tmp_path / "cases", previous_env
    code, out, err = run_cli(capsys, "checkout", "NBspecific_2", "--source", "sample", "--dest", str(dest),
                             "--env", str(env_dir), "--python", str(current_python()))
    assert code == 0, err
    assert (dest / "environment" / "environment.json").read_text().strip() == '{"name": "junobench-2025"}'
    assert f"reused environment {env_dir}" in err
    manifest = read_manifest(env_dir)
    assert manifest["cases"] == ["NBspecific_2"]
    assert out == "" and f"junobench verify --source {dest} --env {env_dir}" in err
    code, out, err = run_cli(capsys, "verify", "--source", str(dest), "--env", str(env_dir), "--no-progress")
    assert code == 0, out + err


def test_the_environment_s_modules_are_compiled_at_install(previous_env):
    """Every kernel would compile pandas' imports again where no bytecode is written (as
    where ``previous_env`` was made)."""
    assert read_manifest(previous_env)["installer"].startswith("uv")
    assert list(previous_env.glob("lib/python*/site-packages/pandas/__pycache__/*.pyc"))


def test_without_uv_the_environment_is_made_with_pip(tmp_path, monkeypatch):
    monkeypatch.setenv("JUNOBENCH_NO_UV", "1")
    monkeypatch.setenv("PIP_COMPILE", "0")  # pip as its user set it (no bytecode: quicker), which junobench keeps
    made = create_environment(tmp_path / "env", select("sample", ["NBspecific_2"]), python=str(current_python()))
    assert not list(made.path.glob("lib/python*/site-packages/pandas/__pycache__/*.pyc"))
    assert made.installer == "pip" and made.manifest["installer"] == "pip"
    _, rows, _ = show_environment(made.path)
    assert {r.name: r.status for r in rows} == {"ipykernel": "ok", "numpy": "ok", "pandas": "ok"}
