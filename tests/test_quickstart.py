"""notebooks/quickstart.ipynb runs top to bottom on the bundled sample (nbclient)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import junobench

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "quickstart.ipynb"

pytestmark = pytest.mark.kernel


def read() -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOK, as_version=4)


def test_stored_without_outputs():
    nb = read()
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


def test_hub_load_is_shown_but_only_runs_when_asked():
    hub_cells = [c for c in read().cells if c.cell_type == "code" and "PELAB-LiU/JunoBench" in c.source]
    assert len(hub_cells) == 1
    lines = hub_cells[0].source.splitlines()
    assert "LOAD_FULL_BENCHMARK = False" in lines[0]
    guard = lines.index("if LOAD_FULL_BENCHMARK:")
    calls = [i for i, line in enumerate(lines) if "load(" in line or "stats(" in line]
    assert calls and all(i > guard and lines[i].startswith("    ") for i in calls)


def _kernel_manager_class() -> type:
    """``python3`` is always this interpreter's ipykernel (no installed kernelspecs)."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from traitlets import default

    class ThisInterpreter(KernelManager):
        @default("kernel_spec_manager")
        def _specs(self) -> KernelSpecManager:
            return KernelSpecManager(kernel_dirs=[], parent=self)

    return ThisInterpreter


def test_runs_top_to_bottom_on_the_sample(tmp_path):
    from nbclient import NotebookClient

    nb = read()
    client = NotebookClient(nb, kernel_name="python3", kernel_manager_class=_kernel_manager_class(),
                            timeout=300, resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError on the first cell that fails

    outputs = {cell.id: cell.outputs for cell in nb.cells if cell.cell_type == "code"}
    text = "\n".join(o.get("text", "") for outs in outputs.values() for o in outs if o.output_type == "stream")
    case = junobench.load("sample", library="pandas")[0]
    assert case["diagnosis"] in text
    assert f"exception: {case['exception']}: " in text
    target = case["execution_order"]["reproduced"][-1]
    assert f"code cell {target['code_cell_index']}, In [{target['execution_count']}]   <- target" in text
    assert "pandas_1_reproduced crash" in text and "pandas_1_fixed no crash" in text
    images = [o for outs in outputs.values() for o in outs if "image/png" in o.get("data", {})]
    assert len(images) == 3  # the three distribution plots, shown inline
    assert not list(tmp_path.iterdir())  # the notebook writes nothing


def test_jupyter_nbconvert_executes_it(tmp_path):
    """The ``run`` extra is enough for ``jupyter nbconvert --to notebook --execute``."""
    jupyter = Path(sys.executable).parent / "jupyter"
    copy = tmp_path / NOTEBOOK.name
    shutil.copy(NOTEBOOK, copy)
    env = {**os.environ, "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data")}  # no user kernelspecs
    done = subprocess.run([str(jupyter), "nbconvert", "--to", "notebook", "--execute", copy.name,
                           "--output", "executed.ipynb"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    executed = nbformat.read(tmp_path / "executed.ipynb", as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the plots were drawn
    assert "pandas_1_reproduced crash" in "".join(o.get("text", "") for o in outputs)
