# `import onnxruntime` loading onyx: only when asked, in one process (install_onnxruntime_alias) or for an
# environment (python3 -m onyx.onnxruntime_alias), never replacing a real onnxruntime.
import os
import subprocess
import sys

import onyx

PROBE = ("import onnxruntime, onnxruntime.capi._pybind_state as C; "
         "from onnxruntime.capi.onnxruntime_pybind11_state import Fail, OrtValueVector; "
         "from onnxruntime.capi.onnxruntime_inference_collection import check_and_normalize_provider_args; "
         "import onyx; print(onnxruntime is onyx, C.OrtValue is onyx._onyx.OrtValue, Fail is onyx.Fail, "
         "onyx.__spec__.name)")


def run(code, extra_path=None):
    paths = [p for p in [extra_path, os.environ.get("PYTHONPATH")] if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def alias(*args):
    return subprocess.run([sys.executable, "-m", "onyx.onnxruntime_alias", *args], capture_output=True, text=True,
                          env=dict(os.environ))


def test_nothing_is_aliased_unless_asked():
    out = run("import onyx, importlib.util; print(importlib.util.find_spec('onnxruntime'))")
    assert out.returncode == 0 and out.stdout.strip() == "None"


def test_in_process_alias_gives_onyx_modules():
    out = run("import onyx; onyx.install_onnxruntime_alias(); " + PROBE)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True", "onyx"]


def test_installed_alias_for_an_environment(tmp_path):
    target = str(tmp_path / "site")
    assert alias("status", "--target", target).stdout.startswith("not installed")
    done = alias("install", "--target", target)
    assert done.returncode == 0, done.stderr
    assert "installed in" in alias("status", "--target", target).stdout
    out = run(PROBE, extra_path=target)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True", "onyx"]
    assert alias("install", "--target", target).returncode == 0  # again: rewrites its own file
    assert alias("uninstall", "--target", target).returncode == 0
    assert not os.path.exists(os.path.join(target, "onnxruntime"))
    assert run(PROBE, extra_path=target).returncode != 0  # gone: no onnxruntime to import


def test_a_real_onnxruntime_is_never_replaced(tmp_path):
    target = tmp_path / "site"
    (target / "onnxruntime").mkdir(parents=True)
    (target / "onnxruntime" / "__init__.py").write_text("REAL = True\n")
    for command in ("install", "uninstall"):
        done = alias(command, "--target", str(target))
        assert done.returncode == 1 and "not onyx's alias" in done.stderr
    assert (target / "onnxruntime" / "__init__.py").read_text() == "REAL = True\n"
    assert "is not onyx's alias" in alias("status", "--target", str(target)).stdout


def test_in_process_alias_replaces_an_imported_onnxruntime(tmp_path):
    target = tmp_path / "site"
    (target / "onnxruntime").mkdir(parents=True)
    (target / "onnxruntime" / "__init__.py").write_text("REAL = True\n")
    out = run("import onnxruntime; assert onnxruntime.REAL; import onyx; onyx.install_onnxruntime_alias(); "
              "import onnxruntime; print(onnxruntime is onyx)", extra_path=str(target))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


def test_onyx_exports_onnxruntime_names():
    for name in ["InferenceSession", "SessionOptions", "RunOptions", "OrtValue", "OrtValueVector", "SparseTensor",
                 "OrtSparseFormat", "OrtDevice", "IOBinding", "OrtMemoryInfo", "OrtArenaCfg", "OrtAllocatorType",
                 "OrtMemType", "GraphOptimizationLevel", "ExecutionMode", "get_all_providers", "get_build_info",
                 "create_and_register_allocator", "enable_telemetry_events", "disable_telemetry_events"]:
        assert hasattr(onyx, name), name
    assert onyx.get_all_providers()[-1] == "CPUExecutionProvider"
    assert "Build Info" in onyx.get_build_info()
