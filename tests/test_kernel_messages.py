"""Messages from a kernel are data from the notebook: a kernel can sign and send anything
on its sockets, so a message nbclient or jupyter_client cannot use is left out (and said in
the cell's output), never a traceback that ends the whole verify / runtime-info / mine run.
"""

from __future__ import annotations

import nbformat
import pytest

from junobench.envs.kernel import message_problem
from junobench.envs.sandbox import Sandbox, bwrap_problem
from junobench.verify.outputs import changes

#: The first cell sends, signed with the kernel's own key, what a hostile notebook could.
HOSTILE_MESSAGES = r'''
k = get_ipython().kernel
par = k.get_parent("shell")
def iopub(kind, body):
    k.session.send(k.iopub_socket, kind, content=body, parent=par)
def raw(header, parent, content):
    k.session.send(k.iopub_socket, {"header": header, "parent_header": parent, "metadata": {},
                                    "content": content, "msg_id": "x", "msg_type": "x"})
iopub("display_data", b'{"data": {"text/plain": "a"}, "metadata": {}, "transient": {"display_id": [1]}}')
iopub("display_data", b'{"data": {"text/plain": NaN}, "metadata": {}}')
iopub("display_data", b'[1, 2]')
iopub("stream", b'{"name": 5, "text": [1]}')
iopub("error", b'{"ename": [1], "evalue": {}, "traceback": "x"}')
iopub("status", b'{}')
raw({"msg_id": "a"}, par, {"name": "stdout", "text": "x"})
raw([1], par, {"name": "stdout", "text": "x"})
raw({"msg_id": "a", "msg_type": 5}, par, {})
raw({"msg_id": "a", "msg_type": "stream", "date": "x"}, [1], {"name": "stdout", "text": "x"})
k.session.send(k.shell_stream, "execute_reply", content=b'{}', parent=par, ident=k._parent_ident["shell"])
k.session.send(k.shell_stream, "execute_reply", content=b'[1]', parent=par, ident=k._parent_ident["shell"])
print("still heard")
'''


@pytest.mark.kernel
@pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap sandbox: {bwrap_problem()}")
def test_malformed_messages_from_the_kernel_are_left_out_and_said(tmp_path):
    pytest.importorskip("nbclient", reason="verify needs the run extra")
    from junobench.data.notebook import Step
    from junobench.verify.runner import replay, run_sync

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(HOSTILE_MESSAGES),
                                               nbformat.v4.new_code_cell("print('after')")])
    log = run_sync(replay(notebook, [Step(0, 1), Step(1, 2)], cwd=tmp_path, timeout=60, sandbox=Sandbox()))
    assert log.failure is None and [s.status for s in log.steps] == ["ok", "ok"], log
    texts = [o.get("text", "") for o in notebook.cells[0].outputs]
    assert "still heard\n" in "".join(texts)
    notes = [t for t in texts if "malformed message(s) from the kernel left out" in t]
    assert len(notes) == 1, texts  # one note however many were left out
    assert "".join(o.get("text", "") for o in notebook.cells[1].outputs) == "after\n"
    nbformat.validate(notebook)  # what was kept is a valid notebook


GOOD = {"header": {"msg_id": "1", "msg_type": "execute_reply"}, "parent_header": {}, "metadata": {},
        "content": {"status": "ok", "execution_count": 3}}


@pytest.mark.parametrize(("change", "problem"), [
    ({"header": [1]}, "a header without msg_id and msg_type strings"),
    ({"header": {"msg_id": "1", "msg_type": 5}}, "a header without msg_id and msg_type strings"),
    ({"parent_header": [1]}, "its parent header is not a JSON object"),
    ({"metadata": None}, "its metadata is not a JSON object"),
    ({"content": [1]}, "its content is not a JSON object"),
    ({"content": {}}, "a execute_reply without a status string"),
    ({"content": {"status": "ok", "execution_count": "3"}}, "an execution_count that is not an integer"),
    ({"content": {"status": "error", "ename": ["E"], "evalue": "", "traceback": []}},
     "an error reply whose ename, evalue and traceback are not text"),
    ({"content": {"status": "error", "ename": "E", "evalue": "", "traceback": [1]}},
     "an error reply whose ename, evalue and traceback are not text"),
    ({"header": {"msg_id": "1", "msg_type": "status"}, "content": {}},
     "a status message without an execution_state string"),
])
def test_a_message_clients_cannot_use_is_named(change, problem):
    assert message_problem(GOOD) is None
    assert message_problem({**GOOD, **change}) == problem


def test_probe_answers_with_keys_of_mixed_types_compare():
    assert changes({1: 0, "a": 0}, {1: 1, "a": 0}) == [1]
