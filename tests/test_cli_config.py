"""How notebooks run may be set once: junobench.toml (your configuration folder, then the
working directory's, never a snapshot's), JUNOBENCH_* variables, then the command line;
and `junobench --help` lists the verbs by who uses them."""

from __future__ import annotations

import pytest
from cli_run import run_cli

from junobench.cli import VERB_GROUPS, build_parser
from junobench.errors import JunoBenchError


@pytest.fixture
def places(tmp_path, monkeypatch):
    """An empty home configuration folder and working directory, no JUNOBENCH_* options."""
    home, work = tmp_path / "config", tmp_path / "work"
    (home / "junobench").mkdir(parents=True)
    work.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.chdir(work)
    for name in ("SANDBOX", "NETWORK", "MEMORY", "EXECUTOR", "PASS_ENV", "ENV", "MAX_PROCESSES"):
        monkeypatch.delenv(f"JUNOBENCH_{name}", raising=False)
    return home / "junobench", work


def parse(*argv):
    return build_parser().parse(list(argv))


def test_defaults_come_from_home_then_the_working_directory_then_variables_then_flags(places, monkeypatch):
    home, work = places
    (home / "junobench.toml").write_text('sandbox = "none"\nmemory = "8GiB"\nnetwork = true\n'
                                         'pass-env = ["HF_TOKEN"]\n')
    args = parse("verify", "--source", "sample")
    assert (args.sandbox, args.memory, args.network, args.pass_env) == ("none", "8GiB", True, ["HF_TOKEN"])
    (work / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.junobench]\nmax_processes = 64\n')
    assert parse("verify").max_processes == 64
    (work / "junobench.toml").write_text('sandbox = "docker"\nexecutor = "ray"\ncpus-per-notebook = 2\n')
    args = parse("runtime-info", "--out", "r.jsonl")
    assert (args.sandbox, args.executor, args.cpus_per_notebook, args.memory) == ("docker", "ray", 2.0, "8GiB")
    assert args.max_processes is None  # junobench.toml, when there is one, is the folder's
    monkeypatch.setenv("JUNOBENCH_SANDBOX", "bwrap")
    monkeypatch.setenv("JUNOBENCH_NETWORK", "no")
    monkeypatch.setenv("JUNOBENCH_PASS_ENV", "A_KEY, B_TOKEN")
    args = parse("verify")
    assert (args.sandbox, args.network, args.pass_env) == ("bwrap", False, ["A_KEY", "B_TOKEN"])
    args = parse("verify", "--sandbox", "auto", "--network", "--pass-env", "C_SECRET")
    assert (args.sandbox, args.network) == ("auto", True)
    assert args.pass_env == ["A_KEY", "B_TOKEN", "C_SECRET"]
    monkeypatch.setenv("JUNOBENCH_NETWORK", "1")
    assert parse("verify", "--no-network").network is False


def test_a_snapshot_s_configuration_is_never_obeyed(places, tmp_path):
    _, work = places
    (work / "junobench.toml").write_text('sandbox = "none"\nnetwork = true\n')
    (work / "benchmark_desc.xlsx").write_bytes(b"")  # the working directory is a snapshot
    args = parse("verify", "--source", ".")
    assert (args.sandbox, args.network) == ("auto", False)
    (work / "benchmark_desc.xlsx").unlink()
    inside = work / "benchmark" / "pandas_1"
    inside.mkdir(parents=True)
    (inside / "junobench.toml").write_text('sandbox = "none"\n')
    import os

    os.chdir(inside)  # inside the folder named by --source
    assert parse("verify", "--source", str(work)).sandbox == "auto"
    assert parse("verify", "--source", "sample").sandbox == "none"  # another source: a folder of yours


@pytest.mark.parametrize(("text", "message"), [
    ('sandbx = "none"\n', "unknown key 'sandbx'"),
    ('sandbox = "nothing"\n', "key 'sandbox': expected one of"),
    ('network = "maybe"\n', "key 'network': expected true or false"),
    ("cpus-per-notebook = \"two\"\n", "key 'cpus-per-notebook': expected a number"),
    ('pass-env = "HF_TOKEN"\n', "key 'pass-env': expected a list of names"),
    ('sandbox = \n', "cannot read the configuration"),
])
def test_a_wrong_configuration_is_one_error_naming_file_and_key(places, capsys, text, message):
    home, _ = places
    (home / "junobench.toml").write_text(text)
    with pytest.raises(JunoBenchError, match=message) as caught:
        parse("verify")
    assert "junobench.toml" in str(caught.value)
    code, _, err = run_cli(capsys, "verify", "--source", "sample")
    assert code == 1 and err.startswith("error:") and len(err.strip().splitlines()) == 1
    assert parse("ls").source  # verbs without these options do not read it


def test_a_wrong_variable_is_named(places, monkeypatch):
    monkeypatch.setenv("JUNOBENCH_MAX_PROCESSES", "lots")
    with pytest.raises(JunoBenchError, match="JUNOBENCH_MAX_PROCESSES: expected an integer"):
        parse("verify")


def test_help_lists_every_verb_once_under_who_uses_it():
    parser = build_parser()
    verbs = {a.dest for action in parser._subparsers._group_actions for a in action._get_subactions()}
    grouped = [verb for _, names in VERB_GROUPS for verb in names]
    assert sorted(grouped) == sorted(verbs)
    out = parser.format_help()
    heads = [out.index(title) for title, _ in VERB_GROUPS]
    assert heads == sorted(heads) and out.index("research") < out.index("  ls ") < out.index("run:")
    assert out.index("maintain") < out.index("construct")


def test_the_ray_liveness_is_an_option_in_seconds(places):
    """--liveness (or liveness in junobench.toml) is the seconds a Ray worker may stay silent;
    a deadline no ping can meet, or one for the local executor, is refused."""
    from junobench.cli.common import executor_options
    from junobench.verify import make_executor

    _, work = places
    options = executor_options(parse("verify", "--executor", "ray", "--liveness", "12"))
    assert options == {"liveness": 12.0} and make_executor("ray", **options).liveness == 12.0
    (work / "junobench.toml").write_text('executor = "ray"\nliveness = 45\n')
    assert executor_options(parse("verify")) == {"liveness": 45.0}
    with pytest.raises(JunoBenchError, match=r"--liveness must be more than 4 s \(workers are pinged every 2 s\)"):
        make_executor("ray", **executor_options(parse("verify", "--liveness", "3")))
    (work / "junobench.toml").unlink()
    with pytest.raises(JunoBenchError, match="--liveness applies to --executor ray only"):
        executor_options(parse("verify", "--liveness", "12"))
