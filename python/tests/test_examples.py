"""The Python examples (examples/python/) agree with NumPy."""

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


@pytest.mark.parametrize("name,tolerance", [("conv", 1e-4), ("mlp", 1e-5), ("softmax", 1e-6)])
def test_example_agrees_with_numpy(name, tolerance):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main() < tolerance
