"""Runs onnxruntime's own Python API tests (the pinned, unmodified copies beside this file) against onyx, with
`import onnxruntime` loading onyx (the only shim), and compares each test's outcome with expectations.txt.

Every test runs. expectations.txt lists, with a reason, the tests that are not expected to pass (`fail`) and the
tests that do not apply to a CPU-only engine (`n/a`: their bodies test CUDA, DML, TensorRT, training or custom
execution providers, and on a CPU-only build pass without testing anything, or need what only those have). The run
fails when a test outside the list fails, when a listed `fail` passes (shrink the list), or when fewer than 90% of
the applicable tests pass.

Usage: run_ort_tests.py [--keep] [-k SUBSTRING]. The tests write files into their working folder, so they run in a
copy of this folder (a temporary one, kept with --keep). ONYX_CUSTOM_OP_LIBRARY names the custom-op test library
(libcustom_op_library.so), copied in as the tests expect it.
"""
import argparse
import os
import pathlib
import shutil
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent
TEST_FILES = ["onnxruntime_test_python", "onnxruntime_test_python_iobinding", "onnxruntime_test_python_sparse_matmul"]
REQUIRED_RATIO = 0.90


def regenerate_missing_data(testdata):
    """model_with_orig_ext_data.onnx keeps its one initializer in model_with_orig_ext_data.bin, which the pinned
    copy lacks: the same values are inline in model_opt_with_ext_data.onnx (the model as onnxruntime optimized it),
    so the file is written from there."""
    import onnx
    optimized = onnx.load(str(testdata / "model_opt_with_ext_data.onnx"))
    (init,) = [t for t in optimized.graph.initializer if t.name == "model_with_orig_ext_data"]
    original = onnx.load(str(testdata / "model_with_orig_ext_data.onnx"), load_external_data=False)
    (ref,) = original.graph.initializer
    location = {e.key: e.value for e in ref.external_data}["location"]
    (testdata / location).write_bytes(init.raw_data)


def backfill_onnx_helper():
    """The iobinding tests call onnx.helper.tensor_dtype_to_np_dtype and np_dtype_to_tensor_dtype, which came in
    onnx 1.13; Debian 12's python3-onnx is 1.12, whose onnx.mapping has the same tables. Added only when missing."""
    from onnx import helper, mapping
    import numpy as np
    if not hasattr(helper, "tensor_dtype_to_np_dtype"):
        helper.tensor_dtype_to_np_dtype = lambda t: mapping.TENSOR_TYPE_TO_NP_TYPE[t]
    if not hasattr(helper, "np_dtype_to_tensor_dtype"):
        helper.np_dtype_to_tensor_dtype = lambda d: mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(d)]


def read_expectations(path):
    expected = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3 or parts[1] not in ("fail", "n/a"):
            sys.exit(f"{path}:{number}: expected 'TEST_ID fail|n/a REASON', got: {line}")
        if parts[0] in expected:
            sys.exit(f"{path}:{number}: {parts[0]} is listed twice")
        expected[parts[0]] = (parts[1], parts[2])
    return expected


class Outcomes(unittest.TextTestResult):
    """Each test's outcome: 'pass', 'fail' (a failure or error, subtests included) or 'skip', with the message."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcomes = {}

    def _set(self, test, outcome, detail=""):
        test_id = getattr(test, "test_case", test).id()  # a subtest counts for its test
        if outcome == "pass" and self.outcomes.get(test_id, ("pass",))[0] != "pass":
            return  # a failed subtest keeps the test failed
        self.outcomes[test_id] = (outcome, detail)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._set(test, "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._set(test, "fail", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self._set(test, "fail", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._set(test, "skip", reason)

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            outcome = "skip" if issubclass(err[0], unittest.SkipTest) else "fail"
            if outcome == "fail" or test.id() not in self.outcomes:  # noqa: SIM102
                self._set(test, outcome, self._exc_info_to_string(err, test) if outcome == "fail" else str(err[1]))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true", help="keep the working folder")
    parser.add_argument("-k", dest="pattern", help="run only tests whose id contains this")
    args = parser.parse_args()

    expected = read_expectations(HERE / "expectations.txt")
    work = pathlib.Path(tempfile.mkdtemp(prefix="onyx_ort_compat_"))
    for name in ["helper.py", "testdata"] + [f + ".py" for f in TEST_FILES]:
        src = HERE / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, work / name)
    regenerate_missing_data(work / "testdata")
    library = os.environ.get("ONYX_CUSTOM_OP_LIBRARY")
    if library:
        shutil.copy(library, work / "libcustom_op_library.so")

    # The shim: `import onnxruntime` loads onyx. The test files themselves are unmodified.
    import onyx
    onyx.install_onnxruntime_alias()
    backfill_onnx_helper()
    os.chdir(work)
    sys.path.insert(0, str(work))

    loader = unittest.TestLoader()
    suite = unittest.TestSuite(loader.loadTestsFromName(name) for name in TEST_FILES)
    if args.pattern:
        def flatten(s):
            for t in s:
                yield from (flatten(t) if isinstance(t, unittest.TestSuite) else [t])
        suite = unittest.TestSuite(t for t in flatten(suite) if args.pattern in t.id())
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=Outcomes)
    result = runner.run(suite)
    if not args.keep:
        os.chdir(HERE)
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"working folder kept: {work}")

    problems = []
    applicable = passed = 0
    for test_id, (outcome, detail) in sorted(result.outcomes.items()):
        kind, reason = expected.get(test_id, (None, None))
        if kind == "n/a":
            continue
        applicable += 1
        passed += outcome == "pass"
        if kind == "fail" and outcome == "pass":
            problems.append(f"{test_id} passes but is listed as failing ({reason}): remove it from expectations.txt")
        elif kind is None and outcome != "pass":
            problems.append(f"{test_id}: {outcome}\n{detail}")
    if not args.pattern:
        for test_id in expected:
            if test_id not in result.outcomes:
                problems.append(f"{test_id} is listed in expectations.txt but no such test ran")
    ratio = passed / applicable if applicable else 0.0
    print(f"\nonnxruntime's Python API tests on onyx: {passed} of {applicable} applicable tests pass ({ratio:.1%}); "
          f"{len(result.outcomes) - applicable} not applicable to a CPU-only engine (listed in expectations.txt)")
    for test_id, (kind, reason) in sorted(expected.items()):
        if test_id in result.outcomes:
            print(f"  {kind:4} {test_id}: {reason}")
    if not args.pattern and ratio < REQUIRED_RATIO:
        problems.append(f"only {ratio:.1%} of the applicable tests pass (at least {REQUIRED_RATIO:.0%} required)")
    for p in problems:
        print(f"PROBLEM: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
