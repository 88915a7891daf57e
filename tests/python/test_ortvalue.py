# onnxruntime's C-level value objects in onyx._onyx: OrtDevice, OrtValue, OrtValueVector, SparseTensor, DLPack,
# and the _Session methods that take and return OrtValues (run_with_ort_values, run_async, nodes, extra options).
import gc
import threading

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx._onyx as C
from onyx._errors import Fail, InvalidArgument
from testutil import F, make_model, tensor_type

CPU = C.OrtDevice(C.OrtDevice.cpu(), C.OrtDevice.default_memory(), 0)
CUDA = C.OrtDevice(C.OrtDevice.cuda(), C.OrtDevice.default_memory(), 0)


def session(model, extra=None):
    if extra is None:
        return C._Session(model, 1, 1, 2, False, 0)
    return C._Session(model, 1, 1, 2, False, 0, extra=extra)


def square_model():
    return make_model([helper.make_node("Mul", ["X", "X"], ["Y"])], [("X", tensor_type(F, [3, 2]))],
                      [("Y", tensor_type(F, [3, 2]))])


def sparse_identity_model():
    sp = helper.make_sparse_tensor_type_proto(F, [3, 3])
    return make_model([helper.make_node("Identity", ["X"], ["Y"])], [("X", sp)], [("Y", sp)])


X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=np.float32)


# ---- OrtDevice ----

def test_ort_device():
    assert (C.OrtDevice.cpu(), C.OrtDevice.cuda(), C.OrtDevice.dml(), C.OrtDevice.fpga(), C.OrtDevice.npu()) == (0, 1, 1, 2, 3)
    assert C.OrtDevice.default_memory() == 0
    d = C.OrtDevice(0, 0, 2, 7)
    assert (d.device_type(), d.device_mem_type(), d.device_id(), d.device_vendor_id()) == (0, 0, 2, 7)
    assert C.OrtDevice(1, 0, 0).device_vendor_id() == 0
    assert "DeviceType:0" in str(d) and "OrtDevice(" in repr(d)


def test_non_cpu_device_is_refused():
    with pytest.raises(Fail, match="only the CPU"):
        C.OrtValue.ortvalue_from_numpy(X, CUDA)
    with pytest.raises(RuntimeError, match="only the CPU"):
        C.OrtValue.ortvalue_from_shape_and_type([2], np.float32, CUDA)
    with pytest.raises(RuntimeError):
        C.SparseTensor.sparse_coo_from_numpy([2], np.ones(1, np.float32), np.zeros(1, np.int64), CUDA)


# ---- OrtValue ----

def test_ortvalue_from_numpy_is_zero_copy():
    v = C.OrtValue.ortvalue_from_numpy(X, CPU)
    assert v.data_ptr() == X.ctypes.data
    assert v.device_name() == "cpu"
    assert v.shape() == [3, 2]
    assert v.data_type() == "tensor(float)"
    assert v.element_type() == TensorProto.FLOAT
    assert v.has_value() and v.is_tensor()
    assert not v.is_sparse_tensor() and not v.is_tensor_sequence()
    assert v.tensor_size_in_bytes() == 24
    out = v.numpy()
    np.testing.assert_array_equal(out, X)
    assert out.ctypes.data != X.ctypes.data  # numpy() copies


def test_ortvalue_from_numpy_copies_what_it_cannot_view():
    t = np.asfortranarray(X)
    v = C.OrtValue.ortvalue_from_numpy(t)
    assert v.data_ptr() != t.ctypes.data
    np.testing.assert_array_equal(v.numpy(), X)
    be = X.astype(">f4")
    np.testing.assert_array_equal(C.OrtValue.ortvalue_from_numpy(be).numpy(), X)


def test_ortvalue_keeps_the_array_alive():
    a = np.arange(1000, dtype=np.int64)
    v = C.OrtValue.ortvalue_from_numpy(a)
    del a
    gc.collect()
    np.testing.assert_array_equal(v.numpy(), np.arange(1000))


def test_ortvalue_from_numpy_non_tensors():
    seq = C.OrtValue.ortvalue_from_numpy([np.array([1, 2]), np.array([3])])
    assert seq.is_tensor_sequence() and not seq.is_tensor()
    assert seq.data_type() == "seq(tensor(int64))"
    assert seq.element_type() == TensorProto.INT64
    with pytest.raises(Fail):
        seq.numpy()
    with pytest.raises(Fail):
        seq.shape()
    strings = C.OrtValue.ortvalue_from_numpy(np.array(["a", "bc"]))
    assert strings.data_type() == "tensor(string)"
    assert list(strings.numpy()) == ["a", "bc"]


def test_ortvalue_from_numpy_with_onnx_type():
    bits = np.array([0x3F80, 0x4000], dtype=np.uint16)  # 1.0 and 2.0 as bfloat16
    v = C.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, TensorProto.BFLOAT16)
    assert v.data_type() == "tensor(bfloat16)"
    assert v.element_type() == TensorProto.BFLOAT16
    assert v.data_ptr() == bits.ctypes.data
    f = C.OrtValue.ortvalue_from_numpy_with_onnx_type(X, TensorProto.FLOAT)
    assert f.element_type() == TensorProto.FLOAT and f.shape() == [3, 2]
    with pytest.raises(InvalidArgument, match="bytes"):
        C.OrtValue.ortvalue_from_numpy_with_onnx_type(X, TensorProto.DOUBLE)
    with pytest.raises(InvalidArgument, match="not an ONNX element type"):
        C.OrtValue.ortvalue_from_numpy_with_onnx_type(X, 99)


@pytest.mark.parametrize("element_type", [np.float32, np.dtype("float32"), "float32", TensorProto.FLOAT])
def test_ortvalue_from_shape_and_type(element_type):
    v = C.OrtValue.ortvalue_from_shape_and_type([2, 3], element_type, CPU)
    assert v.shape() == [2, 3] and v.element_type() == TensorProto.FLOAT
    np.testing.assert_array_equal(v.numpy(), np.zeros((2, 3), np.float32))


def test_ortvalue_from_shape_and_type_errors():
    with pytest.raises(InvalidArgument):
        C.OrtValue.ortvalue_from_shape_and_type([2, -1], np.float32)
    with pytest.raises(InvalidArgument):
        C.OrtValue.ortvalue_from_shape_and_type([2], "not a dtype")
    b = C.OrtValue.ortvalue_from_shape_and_type((4,), np.bool_)
    assert b.data_type() == "tensor(bool)"


def test_update_inplace():
    a = np.zeros((3, 2), np.float32)
    v = C.OrtValue.ortvalue_from_numpy(a)
    v.update_inplace(X)
    np.testing.assert_array_equal(a, X)  # writes through to the viewed array
    owned = C.OrtValue.ortvalue_from_shape_and_type([3, 2], np.float32)
    ptr = owned.data_ptr()
    owned.update_inplace(X * 2)
    assert owned.data_ptr() == ptr
    np.testing.assert_array_equal(owned.numpy(), X * 2)
    with pytest.raises(InvalidArgument):
        owned.update_inplace(np.zeros(5, np.float32))
    with pytest.raises(InvalidArgument):
        owned.update_inplace(np.zeros((3, 2), np.int64))


def test_update_inplace_of_read_only_array_copies():
    a = X.copy()
    a.flags.writeable = False
    v = C.OrtValue.ortvalue_from_numpy(a)
    v.update_inplace(np.ones((3, 2), np.float32))
    np.testing.assert_array_equal(a, X)
    np.testing.assert_array_equal(v.numpy(), np.ones((3, 2)))


# ---- DLPack ----

def test_dlpack_round_trip_is_zero_copy():
    v = C.OrtValue.ortvalue_from_numpy(X)
    cap = v.to_dlpack()
    assert not C.is_dlpack_uint8_tensor(cap)
    v2 = C.OrtValue.from_dlpack(cap, False)
    assert v2.data_ptr() == X.ctypes.data
    np.testing.assert_array_equal(v2.numpy(), X)
    with pytest.raises(InvalidArgument):
        C.OrtValue.from_dlpack(cap, False)  # consumed
    cap = v.__dlpack__()
    assert C.OrtValue.from_dlpack(cap, False).data_ptr() == X.ctypes.data
    assert v.__dlpack_device__() == (1, 0)


def test_dlpack_unconsumed_capsule_is_freed():
    v = C.OrtValue.ortvalue_from_numpy(np.arange(10, dtype=np.int32))
    for _ in range(100):
        v.to_dlpack()
    gc.collect()
    np.testing.assert_array_equal(v.numpy(), np.arange(10))


def test_dlpack_bool_and_uint8():
    b = np.array([True, False, True])
    v = C.OrtValue.ortvalue_from_numpy(b)
    cap = v.to_dlpack()
    assert C.is_dlpack_uint8_tensor(cap)
    back = C.OrtValue.from_dlpack(cap, True)
    assert back.data_type() == "tensor(bool)"
    np.testing.assert_array_equal(back.numpy(), b)
    u = C.OrtValue.from_dlpack(C.OrtValue.ortvalue_from_numpy(b).to_dlpack(), False)
    assert u.data_type() == "tensor(uint8)"


def test_numpy_from_dlpack():
    v = C.OrtValue.ortvalue_from_numpy(X)
    a = np.from_dlpack(v)
    assert a.ctypes.data == X.ctypes.data
    np.testing.assert_array_equal(a, X)
    # and an array's own __dlpack__ into an OrtValue
    y = np.arange(6, dtype=np.float64).reshape(2, 3)
    w = C.OrtValue.from_dlpack(y, False)
    assert w.data_ptr() == y.ctypes.data and w.shape() == [2, 3]


def test_dlpack_errors():
    strings = C.OrtValue.ortvalue_from_numpy(np.array(["a"]))
    with pytest.raises(Fail):
        strings.to_dlpack()
    with pytest.raises(InvalidArgument):
        C.OrtValue.from_dlpack(object(), False)


# ---- OrtValueVector ----

def test_ortvalue_vector():
    vec = C.OrtValueVector()
    vec.reserve(3)
    a = C.OrtValue.ortvalue_from_numpy(X)
    b = C.OrtValue.ortvalue_from_numpy(np.array([True, False]))
    vec.push_back(a)
    vec.push_back(b)
    assert len(vec) == 2
    assert vec[0].data_ptr() == X.ctypes.data
    assert [v.data_type() for v in vec] == ["tensor(float)", "tensor(bool)"]
    np.testing.assert_array_equal(vec.numpy_at(0), X)
    assert vec.element_type_at(1) == TensorProto.BOOL
    assert vec.bool_tensor_indices() == [1]
    assert C.OrtValue.from_dlpack(vec.dlpack_at(0), False).data_ptr() == X.ctypes.data
    with pytest.raises(IndexError):
        vec[2]
    with pytest.raises(IndexError):
        vec[-1]


# ---- SparseTensor ----

def test_sparse_coo():
    values = np.array([1.0, 2.0, 3.0], np.float32)
    indices = np.array([3, 5, 15], np.int64)
    st = C.SparseTensor.sparse_coo_from_numpy([9, 9], values, indices, CPU)
    assert st.format() == C.OrtSparseFormat.ORT_SPARSE_COO
    assert st.dense_shape() == [9, 9]
    assert st.data_type() == "sparse_tensor(float)"
    assert st.device_name() == "cpu"
    vals = st.values()
    assert not vals.flags.writeable
    idx = st.as_coo_view().indices()
    assert not idx.flags.writeable
    del st
    gc.collect()
    np.testing.assert_array_equal(vals, values)
    np.testing.assert_array_equal(idx, indices)


def test_sparse_coo_values_are_zero_copy_and_dense():
    values = np.array([1.0, 2.0], np.float32)
    st = C.SparseTensor.sparse_coo_from_numpy([2, 3], values, np.array([[0, 1], [1, 2]], np.int64), None)
    assert st.values().ctypes.data == values.ctypes.data
    np.testing.assert_array_equal(st.to_dense(), [[0, 1, 0], [0, 0, 2]])
    with pytest.raises(Fail):
        st.as_csrc_view()
    with pytest.raises(Fail):
        st.as_blocksparse_view()
    with pytest.raises(RuntimeError, match="CUDA"):
        st.to_cuda(CUDA)


def test_sparse_coo_strings():
    st = C.SparseTensor.sparse_coo_from_numpy([9, 9], np.array(["xyz", "yxz", "zyx"]), np.array([3, 5, 15]), CPU)
    assert st.data_type() == "sparse_tensor(string)"
    assert list(st.values()) == ["xyz", "yxz", "zyx"]
    assert not st.as_coo_view().indices().flags.writeable
    assert st.to_dense()[0, 3] == "xyz" and st.to_dense()[0, 0] == ""


@pytest.mark.parametrize("indices, match", [
    (np.array([3, 81], np.int64), "outside"),
    (np.array([3, 3], np.int64), "same position"),
    (np.array([3, 5], np.int32), "int64"),
    (np.array([3, 5, 6], np.int64), "shape"),
    (np.array([[0, 9], [1, 1]], np.int64), "outside axis"),
])
def test_sparse_coo_errors(indices, match):
    with pytest.raises(InvalidArgument, match=match):
        C.SparseTensor.sparse_coo_from_numpy([9, 9], np.ones(2, np.float32), indices, CPU)


def test_sparse_csr():
    values = np.array([1.0, 2.0, 3.0], np.float32)
    inner = np.array([1, 1, 1], np.int64)
    outer = np.array([0, 1, 2, 3, 3, 3, 3, 3, 3, 3], np.int64)
    st = C.SparseTensor.sparse_csr_from_numpy([9, 9], values, inner, outer, CPU)
    assert st.format() == C.OrtSparseFormat.ORT_SPARSE_CSRC
    view = st.as_csrc_view()
    assert not view.inner().flags.writeable and not view.outer().flags.writeable
    np.testing.assert_array_equal(view.inner(), inner)
    np.testing.assert_array_equal(view.outer(), outer)
    dense = np.zeros((9, 9), np.float32)
    dense[0, 1], dense[1, 1], dense[2, 1] = 1, 2, 3
    np.testing.assert_array_equal(st.to_dense(), dense)
    with pytest.raises(Fail):
        st.as_coo_view()
    s = C.SparseTensor.sparse_csr_from_numpy([9, 9], np.array(["a", "b", "c"]), inner, outer, CPU)
    assert s.data_type() == "sparse_tensor(string)"


@pytest.mark.parametrize("inner, outer, match", [
    ([1, 1, 9], [0, 1, 2, 3], "columns"),
    ([1, 1, 1], [0, 1, 2], r"rows \+ 1"),
    ([1, 1, 1], [0, 2, 1, 3], "decrease"),
    ([1, 1, 1], [0, 1, 2, 2], "end"),
    ([1, 1], [0, 1, 2, 3], "inner indices"),
])
def test_sparse_csr_errors(inner, outer, match):
    with pytest.raises(InvalidArgument, match=match):
        C.SparseTensor.sparse_csr_from_numpy([3, 9], np.ones(3, np.float32), np.array(inner, np.int64),
                                             np.array(outer, np.int64), CPU)
    with pytest.raises(InvalidArgument, match="2-D"):
        C.SparseTensor.sparse_csr_from_numpy([9], np.ones(1, np.float32), np.zeros(1, np.int64), np.zeros(2, np.int64), CPU)


def test_sparse_block_sparse():
    values = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    indices = np.array([[0, 1], [1, 0]], np.int32)  # block (0, 1) and block (1, 0)
    st = C.SparseTensor.sparse_block_sparse_from_numpy([4, 4], values, indices, CPU)
    assert st.format() == C.OrtSparseFormat.ORT_SPARSE_BLOCK_SPARSE
    np.testing.assert_array_equal(st.as_blocksparse_view().indices(), indices)
    assert not st.values().flags.writeable
    expected = np.zeros((4, 4), np.float32)
    expected[0:2, 2:4] = values[0]
    expected[2:4, 0:2] = values[1]
    np.testing.assert_array_equal(st.to_dense(), expected)
    with pytest.raises(InvalidArgument, match="grid"):
        C.SparseTensor.sparse_block_sparse_from_numpy([4, 4], values, np.array([[0, 2], [1, 0]], np.int32), CPU)
    with pytest.raises(InvalidArgument, match="same position"):
        C.SparseTensor.sparse_block_sparse_from_numpy([4, 4], values, np.array([[0, 0], [1, 1]], np.int32), CPU)
    with pytest.raises(InvalidArgument, match="tile"):
        C.SparseTensor.sparse_block_sparse_from_numpy([5, 4], values, indices, CPU)
    with pytest.raises(InvalidArgument, match="int32"):
        C.SparseTensor.sparse_block_sparse_from_numpy([4, 4], values, indices.astype(np.int64), CPU)


def test_ortvalue_of_sparse_tensor():
    st = C.SparseTensor.sparse_coo_from_numpy([9, 9], np.array([1.0], np.float32), np.array([4]), CPU)
    v = C.OrtValue.ort_value_from_sparse_tensor(st)
    assert v.is_sparse_tensor() and not v.is_tensor()
    assert v.data_type() == "sparse_tensor(float)"
    assert v.shape() == [9, 9]
    back = v.as_sparse_tensor()
    np.testing.assert_array_equal(back.as_coo_view().indices(), [4])
    with pytest.raises(Fail):
        v.numpy()
    with pytest.raises(Fail):
        C.OrtValue.ortvalue_from_numpy(X).as_sparse_tensor()


# ---- _Session ----

def test_run_with_ort_values():
    s = session(square_model())
    v = C.OrtValue.ortvalue_from_numpy(X)
    out = s.run_with_ort_values({"X": v}, ["Y"], C.RunOptions())
    assert isinstance(out, C.OrtValueVector) and len(out) == 1
    np.testing.assert_array_equal(out[0].numpy(), X * X)
    # plain numpy feeds too, and OrtValues in plain run()
    np.testing.assert_array_equal(s.run_with_ort_values({"X": X}, ["Y"], None)[0].numpy(), X * X)
    np.testing.assert_array_equal(s.run(["Y"], {"X": v}, None, False)[0][0], X * X)
    with pytest.raises(InvalidArgument, match="not an input"):
        s.run_with_ort_values({"Z": v}, ["Y"], None)
    with pytest.raises(InvalidArgument, match="not an output"):
        s.run_with_ort_values({"X": v}, ["Z"], None)


def test_sparse_inputs_and_outputs():
    s = session(sparse_identity_model())
    st = C.SparseTensor.sparse_coo_from_numpy([3, 3], np.array([1.0, 2.0], np.float32), np.array([1, 7]), CPU)
    v = C.OrtValue.ort_value_from_sparse_tensor(st)
    out = s.run_with_ort_values({"X": v}, ["Y"], None)[0]
    assert out.is_sparse_tensor()
    sp = out.as_sparse_tensor()
    assert sp.dense_shape() == [3, 3]
    np.testing.assert_array_equal(sp.values(), [1.0, 2.0])
    np.testing.assert_array_equal(sp.as_coo_view().indices(), [1, 7])
    dense = s.run(["Y"], {"X": v}, None, False)[0][0]  # plain run: dense
    np.testing.assert_array_equal(dense, [[0, 1, 0], [0, 0, 0], [0, 2, 0]])
    # a CSR input is densified the same way
    csr = C.SparseTensor.sparse_csr_from_numpy([3, 3], np.array([5.0], np.float32), np.array([2], np.int64),
                                               np.array([0, 0, 1, 1], np.int64), CPU)
    out = s.run_with_ort_values({"X": C.OrtValue.ort_value_from_sparse_tensor(csr)}, ["Y"], None)[0]
    np.testing.assert_array_equal(out.as_sparse_tensor().as_coo_view().indices(), [5])


def test_nodes():
    model = make_model([helper.make_node("Relu", ["X"], ["A"], name="r"), helper.make_node("Neg", ["A"], ["Y"], name="n")],
                       [("X", tensor_type(F, [2]))], [("Y", tensor_type(F, [2]))])
    s = C._Session(model, 1, 0, 2, False, 0)
    assert s.nodes() == [("", "Relu", "r"), ("", "Neg", "n")]


def test_run_async_calls_back_from_another_thread():
    s = session(square_model())
    done = threading.Event()
    seen = {}

    def callback(outputs, data, err):
        seen.update(outputs=outputs, data=data, err=err, thread=threading.get_ident())
        done.set()

    marker = object()
    s.run_async(["Y"], {"X": X}, callback, marker, None)
    del s
    assert done.wait(10)
    assert seen["err"] == "" and seen["data"] is marker
    assert seen["thread"] != threading.get_ident()
    np.testing.assert_array_equal(seen["outputs"][0], X * X)


def test_run_async_reports_errors():
    s = session(square_model())
    done = threading.Event()
    seen = {}
    flags = C.RunOptions()
    flags.terminate = True

    def callback(outputs, data, err):
        seen.update(outputs=outputs, err=err)
        done.set()

    s.run_async(["Y"], {"X": X}, callback, None, flags)
    assert done.wait(10)
    assert seen["outputs"] is None and seen["err"]
    with pytest.raises(InvalidArgument):
        s.run_async(["Y"], {"Q": X}, callback, None, None)


def test_extra_options():
    w = np.array([[2.0, 0.0], [0.0, 2.0]], np.float32)
    model = make_model([helper.make_node("MatMul", ["X", "W"], ["Y"])], [("X", tensor_type(F, ["N", 2]))],
                       [("Y", tensor_type(F, ["N", 2]))], initializers=[numpy_helper.from_array(np.eye(2, dtype=np.float32), "W")])
    s = session(model, extra={"initializers": {"W": C.OrtValue.ortvalue_from_numpy(w)},
                              "free_dimension_overrides_by_name": {"N": 3}})
    assert s.inputs()[0][2] == [3, 2]
    np.testing.assert_array_equal(s.run(["Y"], {"X": X}, None, False)[0][0], X * 2)
    with pytest.raises(InvalidArgument, match="unknown key"):
        session(model, extra={"bogus": 1})
    with pytest.raises(InvalidArgument, match="OrtValue"):
        session(model, extra={"initializers": {"W": w}})
