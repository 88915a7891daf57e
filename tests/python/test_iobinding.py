# onnxruntime's C-level SessionIOBinding in onyx._onyx: inputs bound as arrays, raw memory or OrtValues; outputs
# allocated by onyx or written into caller memory; _Session.run_with_iobinding.
import numpy as np
import pytest
from onnx import TensorProto, helper, mapping

import onyx._onyx as C
from onyx._errors import InvalidArgument
from testutil import F, make_model, tensor_type

CPU = C.OrtDevice(C.OrtDevice.cpu(), C.OrtDevice.default_memory(), 0)
CUDA = C.OrtDevice(C.OrtDevice.cuda(), C.OrtDevice.default_memory(), 0)
X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=np.float32)


def session(model):
    return C._Session(model, 1, 1, 2, False, 0)


def square():
    return session(make_model([helper.make_node("Mul", ["X", "X"], ["Y"])], [("X", tensor_type(F, [3, 2]))],
                              [("Y", tensor_type(F, [3, 2]))]))


def identity(elem):
    return session(make_model([helper.make_node("Identity", ["X"], ["Y"])], [("X", tensor_type(elem, [None, 2]))],
                              [("Y", tensor_type(elem, [None, 2]))]))


def test_bind_numpy_input_and_allocated_output():
    s = square()
    b = C.SessionIOBinding(s)
    b.bind_input("X", X)
    b.bind_output("Y", CPU)
    b.synchronize_inputs()
    s.run_with_iobinding(b, None)
    b.synchronize_outputs()
    outs = b.get_outputs()
    assert isinstance(outs, C.OrtValueVector) and len(outs) == 1
    assert outs[0].device_name() == "cpu"
    np.testing.assert_array_equal(outs[0].numpy(), X * X)
    np.testing.assert_array_equal(b.copy_outputs_to_cpu()[0], X * X)
    # get_outputs can be repeated; rebinding the input reruns on new data
    np.testing.assert_array_equal(b.get_outputs()[0].numpy(), X * X)
    b.bind_input("X", X * 2)
    s.run_with_iobinding(b, C.RunOptions())
    np.testing.assert_array_equal(b.copy_outputs_to_cpu()[0], 4 * X * X)


def test_bind_raw_pointers_is_zero_copy():
    s = square()
    x = X.copy()
    y = np.zeros((3, 2), np.float32)
    b = C.SessionIOBinding(s)
    b.bind_input("X", CPU, np.float32, x.shape, x.ctypes.data)
    b.bind_output("Y", CPU, TensorProto.FLOAT, [3, 2], y.ctypes.data)
    s.run_with_iobinding(b, None)
    np.testing.assert_array_equal(y, X * X)  # written into the caller's memory
    assert b.get_outputs()[0].data_ptr() == y.ctypes.data
    x[:] = 1.0  # the binding views x: a rerun sees the change
    s.run_with_iobinding(b, None)
    np.testing.assert_array_equal(y, np.ones((3, 2)))


def test_bind_ortvalues():
    s = square()
    inp = C.OrtValue.ortvalue_from_numpy(X, CPU)
    out = C.OrtValue.ortvalue_from_shape_and_type([3, 2], np.float32, CPU)
    ptr = out.data_ptr()
    b = C.SessionIOBinding(s)
    b.bind_ortvalue_input("X", inp)
    b.bind_ortvalue_output("Y", out)
    s.run_with_iobinding(b, None)
    assert out.data_ptr() == ptr
    np.testing.assert_array_equal(out.numpy(), X * X)
    b.bind_ortvalue_input("X", C.OrtValue.ortvalue_from_numpy(X * 2))
    s.run_with_iobinding(b, None)
    np.testing.assert_array_equal(out.numpy(), 4 * X * X)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint32, np.int64, np.uint64, np.int16,
                                   np.uint16, np.int8, np.uint8, np.float16, np.bool_])
def test_bind_types(dtype):
    x = np.arange(8).reshape((-1, 2)).astype(dtype)
    s = identity(mapping.NP_TYPE_TO_TENSOR_TYPE[x.dtype])
    v = C.OrtValue.ortvalue_from_numpy(x, CPU)
    b = C.SessionIOBinding(s)
    b.bind_ortvalue_input("X", v)
    b.bind_output("Y", CPU)
    s.run_with_iobinding(b, None)
    np.testing.assert_array_equal(b.get_outputs()[0].numpy(), x)
    b = C.SessionIOBinding(s)
    b.bind_input("X", CPU, dtype, x.shape, v.data_ptr())
    b.bind_output("Y", CPU)
    s.run_with_iobinding(b, None)
    np.testing.assert_array_equal(b.get_outputs()[0].numpy(), x)


def test_bind_bfloat16_by_address():
    s = identity(TensorProto.BFLOAT16)
    x = np.array([[0x3F80, 0x4000]], np.uint16)
    y = np.zeros_like(x)
    b = C.SessionIOBinding(s)
    b.bind_input("X", CPU, TensorProto.BFLOAT16, x.shape, x.ctypes.data)
    b.bind_output("Y", CPU, TensorProto.BFLOAT16, y.shape, y.ctypes.data)
    s.run_with_iobinding(b, None)
    np.testing.assert_array_equal(y, x)


def test_preallocated_output_mismatch():
    s = square()
    b = C.SessionIOBinding(s)
    b.bind_input("X", X)
    y = np.zeros((2, 3), np.float32)
    b.bind_output("Y", CPU, np.float32, y.shape, y.ctypes.data)
    with pytest.raises(InvalidArgument, match=r"float\[3,2\]"):
        s.run_with_iobinding(b, None)
    b.bind_ortvalue_output("Y", C.OrtValue.ortvalue_from_shape_and_type([3, 2], np.int64))
    with pytest.raises(InvalidArgument, match="int64"):
        s.run_with_iobinding(b, None)


def test_binding_errors():
    s = square()
    b = C.SessionIOBinding(s)
    with pytest.raises(InvalidArgument, match="'Q' is not an input.*'X'"):
        b.bind_input("Q", X)
    with pytest.raises(InvalidArgument, match="'X' is not an output.*'Y'"):
        b.bind_output("X", CPU)
    with pytest.raises(RuntimeError, match="only the CPU"):
        b.bind_output("Y", CUDA)
    with pytest.raises(RuntimeError, match="only the CPU"):
        b.bind_input("X", CUDA, np.float32, [3, 2], X.ctypes.data)
    with pytest.raises(InvalidArgument):
        b.bind_ortvalue_input("X", X)
    with pytest.raises(InvalidArgument):
        C.SessionIOBinding(object())
    b.bind_input("X", X)
    with pytest.raises(InvalidArgument, match="no outputs"):
        s.run_with_iobinding(b, None)
    other = square()
    b.bind_output("Y", CPU)
    with pytest.raises(InvalidArgument, match="another session"):
        other.run_with_iobinding(b, None)


def test_clear_bindings():
    s = square()
    b = C.SessionIOBinding(s)
    b.bind_input("X", X)
    b.bind_output("Y", CPU)
    s.run_with_iobinding(b, None)
    b.clear_binding_outputs()
    assert len(b.get_outputs()) == 0
    b.clear_binding_inputs()
    b.bind_output("Y", CPU)
    with pytest.raises(InvalidArgument, match="missing"):
        s.run_with_iobinding(b, None)


def test_sparse_output_through_binding():
    sp = helper.make_sparse_tensor_type_proto(F, [3, 3])
    s = session(make_model([helper.make_node("Identity", ["X"], ["Y"])], [("X", sp)], [("Y", sp)]))
    st = C.SparseTensor.sparse_coo_from_numpy([3, 3], np.array([4.0], np.float32), np.array([8]), CPU)
    b = C.SessionIOBinding(s)
    b.bind_ortvalue_input("X", C.OrtValue.ort_value_from_sparse_tensor(st))
    b.bind_output("Y", CPU)
    s.run_with_iobinding(b, None)
    out = b.get_outputs()[0]
    assert out.is_sparse_tensor()
    np.testing.assert_array_equal(out.as_sparse_tensor().as_coo_view().indices(), [8])
    np.testing.assert_array_equal(b.copy_outputs_to_cpu()[0], [[0, 0, 0], [0, 0, 0], [0, 0, 4]])
