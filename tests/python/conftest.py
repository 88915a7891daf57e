# pytest setup for the onyx Python package tests: which build's package is tested, and shared fixtures.
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# ctest sets PYTHONPATH to its build's package; a plain `pytest tests/python` tests this checkout's build/.
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(ROOT / "build" / "python"))


@pytest.fixture
def write_model(tmp_path):
    """Writes model bytes to a file and returns its path."""
    def write(data, name="model.onnx"):
        path = tmp_path / name
        path.write_bytes(data)
        return str(path)
    return write

