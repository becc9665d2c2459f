"""Compiles each module given to PTX with `jitc compile --target nvptx` for
each architecture, in both math modes, and assembles the PTX with NVIDIA's
ptxas: register use and the PTX ISA are checked with no GPU.

Usage: python ptxas-all.py PTXAS MODULE...

A MODULE may name extra `jitc compile` flags after `::`, comma-separated
(`chains.mlir::--jittor-rules`); its lines then name them too.

Prints one line per module, architecture and mode, then `N passed, N failed`;
exits 1 if ptxas rejects any PTX (its message is printed) or jitc fails.
"""
import os
import subprocess
import sys
import tempfile

ptxas, modules = sys.argv[1], sys.argv[2:]
if not os.access(ptxas, os.X_OK):
    sys.exit(f"no ptxas at {ptxas}: run bash scripts/setup.sh, which installs it into .venv")
passed = failed = 0
with tempfile.TemporaryDirectory() as scratch:
    for spec in modules:
        module, _, extra = spec.partition("::")
        flags = [flag for flag in extra.split(",") if flag]
        name = " ".join([os.path.basename(module)] + flags)
        for arch in ("sm_80", "sm_90"):
            for math in ("fast", "exact"):
                ptx = os.path.join(scratch, f"{len(flags)}-{os.path.basename(module)}.{arch}.{math}.ptx")
                compiled = subprocess.run(
                    ["jitc", "compile", "--target", "nvptx", "--gpu-arch", arch, "--math", math,
                     "--emit", "ptx", *flags, module, "-o", ptx],
                    capture_output=True, text=True)
                if compiled.returncode != 0:
                    print(f"FAIL {name} {arch} {math}: jitc compile: {compiled.stderr.strip()}")
                    failed += 1
                    continue
                entries = sum(1 for line in open(ptx) if line.startswith(".visible .entry"))
                assembled = subprocess.run([ptxas, f"-arch={arch}", ptx, "-o", os.devnull],
                                           capture_output=True, text=True)
                if assembled.returncode != 0:
                    print(f"FAIL {name} {arch} {math}: ptxas: {assembled.stderr.strip()}")
                    failed += 1
                else:
                    print(f"ok {name} {arch} {math}: {entries} entries")
                    passed += 1
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
