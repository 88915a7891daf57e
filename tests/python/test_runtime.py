# Running: zero-copy inputs and outputs, the terminate flag (from another thread, with the GIL released),
# concurrent runs, and profiling.
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import onyx
import pytest
from onnx import TensorProto, helper
from testutil import F, make_model, tensor_type


def test_contiguous_inputs_are_viewed_not_copied():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert onyx._onyx._feed_address(a) == a.ctypes.data
    b = np.array([True, False])
    assert onyx._onyx._feed_address(b) == b.ctypes.data
    h = np.ones(3, np.float16)
    assert onyx._onyx._feed_address(h) == h.ctypes.data
    # What the engine cannot read in place is copied: strided views, other byte orders, misaligned data.
    strided = a[:, 1:3]
    assert onyx._onyx._feed_address(strided) != strided.ctypes.data
    swapped = a.astype(">f4")
    assert onyx._onyx._feed_address(swapped) != swapped.ctypes.data
    misaligned = np.zeros(17, np.uint8)[1:].view(np.float32)
    assert not misaligned.flags.aligned
    assert onyx._onyx._feed_address(misaligned) != misaligned.ctypes.data


def test_feeds_are_released_after_the_run():
    sess = onyx.InferenceSession(make_model([helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["z"])],
                                            [("x", tensor_type(F, [3]))], [("y", tensor_type(F, [3])), ("z", tensor_type(F, [3]))]))
    x = np.ones(3, np.float32)
    before = sys.getrefcount(x)
    for _ in range(100):
        y, z = sess.run(None, {"x": x})
    assert sys.getrefcount(x) == before
    assert y.tolist() == [1, 1, 1] and z.tolist() == [-1, -1, -1]


def test_copied_inputs_give_the_same_results():
    sess = onyx.InferenceSession(make_model([helper.make_node("Neg", ["x"], ["y"])], [("x", tensor_type(F, [2, 2]))],
                                            [("y", tensor_type(F, [2, 2]))]))
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for feed in (a[1:3, 1:3], a[1:3, 1:3].astype(">f4"), np.asfortranarray(a[:2, :2])):
        (y,) = sess.run(None, {"x": feed})
        np.testing.assert_array_equal(y, -np.asarray(feed, np.float32))


def test_outputs_take_over_onyx_buffers():
    sess = onyx.InferenceSession(make_model([helper.make_node("Add", ["x", "x"], ["y"])],
                                            [("x", tensor_type(F, [1000]))], [("y", tensor_type(F, [1000]))]))
    x = np.arange(1000, dtype=np.float32)
    (y,) = sess.run(None, {"x": x})
    assert type(y.base).__name__ == "PyCapsule" and not y.flags.owndata and y.flags.writeable
    y[:] = 1  # the array is the caller's now
    (again,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(again, 2 * x)


def test_shared_buffers_are_copied_out():
    """Outputs that alias an input, an initializer or each other come back as independent arrays."""
    weights = helper.make_tensor("w", F, [3], [1.0, 2.0, 3.0])
    nodes = [helper.make_node("Identity", ["x"], ["same_as_x"]), helper.make_node("Identity", ["w"], ["same_as_w"]),
             helper.make_node("Add", ["x", "w"], ["sum"]), helper.make_node("Identity", ["sum"], ["same_as_sum"])]
    model = make_model(nodes, [("x", tensor_type(F, [3]))],
                       [(n, tensor_type(F, [3])) for n in ("same_as_x", "same_as_w", "sum", "same_as_sum")],
                       initializers=[weights])
    sess = onyx.InferenceSession(model)
    x = np.zeros(3, np.float32)
    as_x, as_w, total, as_total = sess.run(None, {"x": x})
    assert not np.shares_memory(as_x, x)
    assert not np.shares_memory(total, as_total)
    for out in (as_x, as_w, total, as_total):
        assert out.flags.writeable
        out[:] = -1
    assert x.tolist() == [0, 0, 0]
    as_x, as_w, total, as_total = sess.run(None, {"x": x})
    assert as_w.tolist() == [1, 2, 3] and total.tolist() == [1, 2, 3] and as_x.tolist() == [0, 0, 0]


def counting_loop_model():
    """y = x + M, one Add per iteration of a Loop (so a run takes as long as M says)."""
    one = helper.make_node("Constant", [], ["one"], value=helper.make_tensor("one", F, [1], [1.0]))
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), one, helper.make_node("Add", ["x_in", "one"], ["x_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("x_in", F, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("x_out", F, [1])])
    loop = helper.make_node("Loop", ["M", "", "x"], ["y"], body=body, name="loop")
    return make_model([loop], [("M", tensor_type(TensorProto.INT64, [])), ("x", tensor_type(F, [1]))],
                      [("y", tensor_type(F, [1]))])


def test_terminate_from_another_thread_stops_the_run():
    sess = onyx.InferenceSession(counting_loop_model())
    x = np.zeros(1, np.float32)
    (y,) = sess.run(None, {"M": np.array(10, np.int64), "x": x})
    assert y.tolist() == [10.0]

    # Long enough that the run would take many seconds; the flag is set from this thread while it runs, which
    # needs the GIL to be released during the run.
    options = onyx.RunOptions()
    outcome = {}

    def run():
        began = time.monotonic()
        try:
            outcome["result"] = sess.run(None, {"M": np.array(5_000_000, np.int64), "x": x}, options)
        except onyx.OnyxError as e:
            outcome["error"] = e
        outcome["seconds"] = time.monotonic() - began

    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(0.2)
    assert worker.is_alive(), "the run ended before it could be terminated"
    options.terminate = True
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert isinstance(outcome.get("error"), onyx.Fail), outcome
    assert "terminated" in str(outcome["error"])
    assert outcome["seconds"] < 10

    # A flag set beforehand stops the run before its first node; cleared, runs go on.
    with pytest.raises(onyx.Fail, match="terminated"):
        sess.run(None, {"M": np.array(1, np.int64), "x": x}, options)
    options.terminate = False
    (y,) = sess.run(None, {"M": np.array(3, np.int64), "x": x}, options)
    assert y.tolist() == [3.0]


def test_timeout_ms_stops_a_long_run():
    sess = onyx.InferenceSession(counting_loop_model())
    x = np.zeros(1, np.float32)
    options = onyx.RunOptions()
    assert options.timeout_ms == 0
    with pytest.raises(ValueError, match="negative"):
        options.timeout_ms = -1
    options.timeout_ms = 50
    with pytest.raises(onyx.Fail, match=r"deadline \(timeout of 50 ms\)"):
        sess.run(None, {"M": np.array(1 << 62, np.int64), "x": x}, options)
    (y,) = sess.run(None, {"M": np.array(3, np.int64), "x": x}, options)
    assert y.tolist() == [3.0]


def test_memory_limit_mb_fails_a_run_naming_the_node_and_the_session_runs_again():
    """Expand to n floats: 8M of them (32 MiB) pass a 16 MiB limit, 1M (4 MiB) fit."""
    model = make_model([helper.make_node("Expand", ["x", "shape"], ["y"], name="grow")],
                       [("x", tensor_type(F, [1])), ("shape", tensor_type(TensorProto.INT64, [1]))],
                       [("y", tensor_type(F, None))])
    options = onyx.SessionOptions()
    assert options.memory_limit_mb == 0
    options.memory_limit_mb = 16
    sess = onyx.InferenceSession(model, options)
    x = np.ones(1, np.float32)
    with pytest.raises(onyx.Fail, match=r"grow.*memory limit of 16 MiB exceeded"):
        sess.run(None, {"x": x, "shape": np.array([8 << 20], np.int64)})
    (y,) = sess.run(None, {"x": x, "shape": np.array([1 << 20], np.int64)})
    assert y.shape == (1 << 20,) and y[-1] == 1.0
    options.memory_limit_mb = -1
    with pytest.raises(onyx.InvalidArgument, match="memory_limit_mb"):
        onyx.InferenceSession(model, options)


def test_concurrent_runs_of_one_session():
    sess = onyx.InferenceSession(counting_loop_model())
    errors, results = [], {}

    def work(k):
        try:
            for i in range(20):
                (y,) = sess.run(None, {"M": np.array(50 + i, np.int64), "x": np.full(1, k, np.float32)})
                results[(k, i)] = float(y[0])
        except Exception as e:  # reported below, with the thread's inputs
            errors.append((k, e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {(k, i): float(k + 50 + i) for k in range(4) for i in range(20)}


def test_profiling_writes_a_chrome_trace(tmp_path):
    so = onyx.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    model = make_model([helper.make_node("Add", ["x", "x"], ["s"], name="add"),
                        helper.make_node("Mul", ["s", "x"], ["y"], name="mul")],
                       [("x", tensor_type(F, [4]))], [("y", tensor_type(F, [4]))])
    sess = onyx.InferenceSession(model, so)
    assert sess.get_profiling_start_time_ns() > 0
    x = np.ones(4, np.float32)
    for _ in range(2):
        sess.run(None, {"x": x})
    path = sess.end_profiling()
    assert path.startswith(str(tmp_path / "prof_")) and path.endswith(".json")
    events = json.loads(pathlib_read(path))
    names = [e["name"] for e in events]
    assert names.count("session_initialization") == 1
    assert names.count("model_run") == 2
    assert names.count("add_kernel_time") == 2 and names.count("mul_kernel_time") == 2
    for e in events:
        assert e["ph"] == "X" and e["pid"] == os.getpid()
        assert isinstance(e["ts"], int) and isinstance(e["dur"], int) and e["ts"] >= 0 and e["dur"] >= 0
    runs = [e for e in events if e["name"] == "model_run"]
    nodes = [e for e in events if e["cat"] == "Node"]
    assert {e["args"]["op_name"] for e in nodes} == {"Add", "Mul"}
    assert all(e["args"]["provider"] == "CPUExecutionProvider" for e in nodes)
    for e in nodes:  # each node lies within one of the runs (microsecond rounding aside)
        assert any(r["ts"] <= e["ts"] and e["ts"] + e["dur"] <= r["ts"] + r["dur"] + 1 for r in runs)
    assert sess.end_profiling() == ""  # profiling stopped with the first end_profiling

    sess = onyx.InferenceSession(model)
    sess.run(None, {"x": x})
    assert sess.end_profiling() == "" and sess.get_profiling_start_time_ns() == 0


def test_profiling_names_subgraph_nodes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    so = onyx.SessionOptions()
    so.enable_profiling = True
    sess = onyx.InferenceSession(counting_loop_model(), so)
    sess.run(None, {"M": np.array(3, np.int64), "x": np.zeros(1, np.float32)})
    path = sess.end_profiling()
    assert os.path.dirname(path) == "" and os.path.basename(path).startswith("onyx_profile_")
    events = json.loads(pathlib_read(tmp_path / path))
    body_adds = [e for e in events if e["cat"] == "Node" and e["args"]["op_name"] == "Add"]
    assert len(body_adds) == 3 and all("body" in e["args"]["graph"] for e in body_adds)
    assert [e["name"] for e in events if e["cat"] == "Node" and e["args"]["op_name"] == "Loop"] == ["loop_kernel_time"]


def pathlib_read(path):
    with open(path) as f:
        return f.read()


@pytest.mark.parametrize("env, policy", [({}, "PASSIVE"), ({"ONYX_SPIN_WAIT": "1"}, None),
                                         ({"OMP_WAIT_POLICY": "active"}, "active"),
                                         ({"GOMP_SPINCOUNT": "1000"}, None)])
def test_workers_sleep_while_waiting_unless_asked_to_spin(env, policy):
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "ONYX_SPIN_WAIT")}
    out = subprocess.run([sys.executable, "-c", "import os, onyx; print(os.environ.get('OMP_WAIT_POLICY'))"],
                         env={**clean, **env}, capture_output=True, text=True, check=True).stdout.strip()
    assert out == str(policy)
