# lit configuration for jitc. Run through scripts/test.sh, or directly:
#   /usr/lib/llvm-22/bin/lit -v test/
# Environment:
#   JITC_BIN_DIR  folder holding the built `jitc` (default: target/debug)
#   LLVM_BIN_DIR  LLVM 22's tools: FileCheck, not, count (default: /usr/lib/llvm-22/bin)
import os
import sys

import lit.formats

config.name = "jitc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = config.test_source_root
config.excludes = ["Inputs", "lit.cfg.py"]

root = os.path.dirname(config.test_source_root)
target_dir = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
jitc_dir = os.environ.get("JITC_BIN_DIR", os.path.join(target_dir, "debug"))
llvm_dir = os.environ.get("LLVM_BIN_DIR", "/usr/lib/llvm-22/bin")

if not os.path.isfile(os.path.join(jitc_dir, "jitc")):
    lit_config.fatal(f"no jitc in {jitc_dir}: build it first (cargo build -p jitc) or set JITC_BIN_DIR")
for tool in ("FileCheck", "not", "mlir-opt"):
    if not os.path.isfile(os.path.join(llvm_dir, tool)):
        lit_config.fatal(f"no {tool} in {llvm_dir}: run scripts/setup.sh or set LLVM_BIN_DIR")

config.environment["PATH"] = os.pathsep.join([jitc_dir, llvm_dir, config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%irdl", os.path.join(root, "dialects", "irdl", "meta.irdl.mlir")))
config.substitutions.append(("%examples", os.path.join(root, "examples")))
config.substitutions.append(("%python", sys.executable))
# NVIDIA's PTX assembler, from the PyPI wheel nvidia-cuda-nvcc-cu12 that
# scripts/setup.sh installs into .venv (tests that use it fail, saying so,
# when it is missing).
config.substitutions.append(("%ptxas", os.path.join(root, ".venv", "bin", "ptxas")))
# NVIDIA's libdevice from the same wheel. Tests that link it name it with
# `env JITC_LIBDEVICE=%libdevice`; the rest run without it.
import glob

libdevice = glob.glob(os.path.join(root, ".venv", "lib", "python3*", "site-packages", "nvidia", "cuda_nvcc", "nvvm", "libdevice", "libdevice.10.bc"))
config.substitutions.append(("%libdevice", libdevice[0] if libdevice else "libdevice-not-installed"))
config.environment.pop("JITC_LIBDEVICE", None)
# CUDA's own libdevice is found without JITC_LIBDEVICE: tests of the
# message for a missing one cannot run where it is installed.
if os.path.isfile("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"):
    config.available_features.add("system-libdevice")
# The system's mlir-opt 22, which `jitc opt`'s tests compare against.
config.substitutions.append(("%mlir_opt", os.path.join(llvm_dir, "mlir-opt")))

# A machine with the CUDA driver runs `--backend cuda` for real; tests of
# the no-driver message are unsupported there.
import ctypes.util

if ctypes.util.find_library("cuda"):
    config.available_features.add("cuda-driver")
