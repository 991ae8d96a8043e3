"""CRANE-LLM's published inputs as tasks: the prompt built from each is the input itself."""

from __future__ import annotations

import json
import os

import pytest
from cli_run import run_cli  # tests/ is on sys.path under pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from junobench.detection.crane_inputs import parse_document, read_documents, render_document
from junobench.detection.prompt import user_message
from junobench.detection.tasks import build_tasks, read_tasks, read_truth, tasks
from junobench.errors import JunoBenchError

#: CRANE-LLM's input folders: the LLM inputs without and with runtime information, and the
#: static analysers' inputs with runtime type annotations.
FOLDERS = ("llms/llms_inputs/executed_code", "llms/llms_inputs/executed_code_runinfo",
           "sas/sas_inputs/executed_code_runinfo")


def published(folder) -> dict[str, bytes]:
    return {path.stem: path.read_bytes() for path in folder.glob("*/*.txt")}


@pytest.fixture(scope="module")
def records(reference_snapshot):
    import junobench

    return junobench.load(reference_snapshot, "notebooks").to_list()


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_published_input_is_its_tasks_prompt(crane_llm_dir, reference_snapshot, folder):
    """All 222 notebooks of each folder: the user message built from the task (blind id,
    through the tasks file) is the published file, byte for byte."""
    files = published(crane_llm_dir / folder)
    assert len(files) == 222
    built, truths = tasks(reference_snapshot, crane_inputs=crane_llm_dir / folder,
                          key=b"k" * 32)
    instance_of = {t["id"]: t["instance"] for t in truths}
    assert sorted(instance_of.values()) == sorted(files)
    for task in built:
        assert user_message(task).encode("utf-8") == files[instance_of[task["id"]]]


def test_runtime_section_and_cells_are_kept_apart(crane_llm_dir):
    documents = read_documents(crane_llm_dir / "llms/llms_inputs/executed_code_runinfo")
    task = documents["sklearn_1_reproduced"]
    assert task["runtime_info"].startswith("{'METRICS': {'execution_cell_source'")
    assert task["target_cell"]["source"].lstrip().startswith("from sklearn.utils.class_weight")
    assert "Current relevent runtime" not in task["target_cell"]["source"]
    none_ran = documents["numpy_9_reproduced"]
    assert none_ran["executed_cells"] == []
    code_only = read_documents(crane_llm_dir / "llms/llms_inputs/executed_code")
    assert "runtime_info" not in code_only["sklearn_1_reproduced"]
    # the same executed cells and target, with and without runtime information
    assert code_only["sklearn_1_reproduced"]["executed_cells"] == task["executed_cells"]
    annotated = read_documents(crane_llm_dir / "sas/sas_inputs/executed_code_runinfo")
    assert annotated["numpy_2_reproduced"]["target_title"] == "Annotated Target Code"
    assert annotated["numpy_2_reproduced"]["target_cell"]["source"].startswith(
        "X_train: np.ndarray\n")


def test_tasks_verb_writes_crane_tasks(crane_llm_dir, reference_snapshot, tmp_path, capsys):
    folder = crane_llm_dir / "llms/llms_inputs/executed_code_runinfo"
    out = tmp_path / "tasks.jsonl"
    code, stdout, stderr = run_cli(capsys, "tasks", "--source", str(reference_snapshot),
                                   "--crane-inputs", str(folder), "--library", "sklearn",
                                   "--out", str(out))
    assert code == 0 and stdout == "" and "wrote 30 tasks" in stderr
    truth = {row["id"]: row["instance"] for row in read_truth(tmp_path / "tasks.truth.jsonl")}
    for task in read_tasks(out):
        instance = truth[task["id"]]
        assert task["style"] == "crane"
        assert user_message(task) == (folder / "sklearn" / f"{instance}.txt").read_text()
    code, _, err = run_cli(capsys, "tasks", "--source", str(reference_snapshot),
                           "--crane-inputs", str(folder), "--keep-comments",
                           "--out", str(tmp_path / "t2.jsonl"))
    assert code == 1 and err.startswith("error:") and "as published" in err


def test_a_folder_lacking_notebooks_names_them(crane_llm_dir, records, tmp_path):
    folder = tmp_path / "inputs" / "torch"
    folder.mkdir(parents=True)
    source = crane_llm_dir / "llms/llms_inputs/executed_code/torch/torch_1_fixed.txt"
    (folder / "torch_1_fixed.txt").write_bytes(source.read_bytes())
    documents = read_documents(tmp_path / "inputs")
    torch_1 = [r for r in records if r["case_id"] == "torch_1"]
    with pytest.raises(JunoBenchError, match="no CRANE-LLM input for 1 of the 2 notebooks: "
                       "torch_1_reproduced"):
        build_tasks(torch_1, documents=documents)
    built, truth = build_tasks([r for r in torch_1 if r["version"] == "fixed"],
                               documents=documents)
    assert truth[0]["instance"] == "torch_1_fixed"
    assert user_message(built[0]).encode() == source.read_bytes()


@pytest.mark.parametrize("text, problem", [
    ("print(1)", "does not start with '# Executed Cells:'"),
    ("# Executed Cells:\nx = 1\n\n# Target Cell:\ny", "do not start with '## Cell 1:'"),
    ("# Executed Cells:\n## Cell 1:\nx = 1", "cell 1 is not followed"),
    ("# Executed Cells:\nNo cell has been executed\n# Target:\ny", "no '# Target Cell:'"),
    ("# Executed Cells:\n## Cell 1:\nx\n\n# Current relevent runtime information:\n{}",
     "not followed by the target cell"),
])
def test_what_is_not_a_crane_input_is_refused(tmp_path, text, problem):
    (tmp_path / "numpy").mkdir()
    file = tmp_path / "numpy" / "numpy_1_fixed.txt"
    file.write_text(text)
    with pytest.raises(JunoBenchError, match="numpy_1_fixed.txt: case numpy_1_fixed: not a "
                       "CRANE-LLM input: .*" + problem.replace("(", r"\(")):
        read_documents(tmp_path)


def test_bad_folders_and_files_are_refused(tmp_path):
    good = "# Executed Cells:\nNo cell has been executed\n# Target Cell:\nx"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "notes.txt").write_text(good)
    with pytest.raises(JunoBenchError, match=r"'notes\.txt' names no notebook"):
        read_documents(tmp_path / "a")
    (tmp_path / "b" / "other").mkdir(parents=True)
    (tmp_path / "b" / "numpy_1_fixed.txt").write_text(good)
    (tmp_path / "b" / "other" / "numpy_1_fixed.txt").write_text(good)
    with pytest.raises(JunoBenchError, match="two inputs for numpy_1_fixed"):
        read_documents(tmp_path / "b")
    (tmp_path / "c").mkdir()
    (tmp_path / "elsewhere.txt").write_text(good)
    os.symlink(tmp_path / "elsewhere.txt", tmp_path / "c" / "numpy_1_fixed.txt")
    with pytest.raises(JunoBenchError, match="symbolic link"):
        read_documents(tmp_path / "c")
    (tmp_path / "d").mkdir()
    with pytest.raises(JunoBenchError, match=r"no <instance>\.txt files"):
        read_documents(tmp_path / "d")
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "numpy_1_fixed.txt").write_bytes(b"\xff\xfe")
    with pytest.raises(JunoBenchError, match="cannot read the CRANE-LLM input"):
        read_documents(tmp_path / "e")


def test_render_is_parse_inverse_on_edge_cases():
    for doc in ["# Executed Cells:\nNo cell has been executed\n# Target Cell:\n",
                "# Executed Cells:\n## Cell 1:\n\n\n## Cell 2:\na\n\n# Target Cell:\nb\n",
                "# Executed Cells:\n## Cell 1:\nx\n\n# Current relevent runtime information:\n"
                "{}\n# Target Cell:\nx"]:
        assert render_document(parse_document(doc)) == doc
    task = parse_document("# Executed Cells:\n## Cell 1:\nx\n\n# Current relevent runtime "
                          "information:\n{}\n# Target Cell:\nx")
    assert task["runtime_info"] == "{}"
    assert json.loads(json.dumps(task)) == task


def test_a_linked_library_folder_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "inputs").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "inputs" / "numpy")
    with pytest.raises(JunoBenchError, match="symbolic link"):
        read_documents(tmp_path / "inputs")


@settings(max_examples=300)
@given(st.lists(st.sampled_from([*"# \n:ECTRNabcelx12{}", "# Executed Cells:\n", "## Cell 1:\n",
                                  "## Cell 2:\n", "\n\n", "# Target Cell:\n",
                                  "# Current relevent runtime information:\n",
                                  "No cell has been executed\n", "# Annotated Target Code:\n"]),
                max_size=15).map("".join))
def test_any_text_is_a_document_that_renders_back_or_a_clear_error(text):
    try:
        task = parse_document(text, file="x.txt")
    except JunoBenchError as error:
        assert str(error).startswith("x.txt: not a CRANE-LLM input: ")
        return
    assert render_document(task) == text
