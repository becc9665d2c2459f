#!/usr/bin/env bash
# Checks the architecture invariants of ARCHITECTURE.md that a build alone
# does not: where `unsafe` and raw MLIR C-API calls may appear, that no crate
# outside the compiler names a compiler module behind its front door, the
# crates each crate may depend on, and that no crate's modules import each
# other in a cycle. Prints one line per broken rule and exits 1 if any.
set -euo pipefail
cd "$(dirname "$0")/.."

failed=0
fail() { echo "architecture: $*" >&2; failed=1; }

# Pass bodies contain no `unsafe`: IR surgery goes through compiler/src/rewrite.rs.
if hits=$(grep -rn --include='*.rs' -w 'unsafe' compiler/src/transforms compiler/src/fusion); then
  fail "\`unsafe\` in a pass or the fuser (use the helpers of compiler/src/rewrite.rs):"$'\n'"$hits"
fi

# Raw MLIR C-API calls live at the compiler's FFI edges only: IR surgery
# (rewrite.rs), the pass manager (pipeline.rs), the parser (source.rs),
# LLVM translation (codegen.rs) and the lowering's emitters (lower/).
if hits=$(grep -rln --include='*.rs' 'mlir_sys::' compiler/src \
    | grep -v -E '^compiler/src/(rewrite|pipeline|source|codegen)\.rs$|^compiler/src/lower/'); then
  fail "raw C-API calls outside the compiler's FFI edges: $hits"
fi

# The runtime, the tools and the tests use only the compiler's front door
# (the build enforces it: these modules are not exported).
internal='jitc_compiler::(codegen|context|diagnostics|error|fusion|guards|lower|pass|passes|pipeline|rewrite|source|transforms|verify_diagnostics)::'
if hits=$(grep -rnE --include='*.rs' "$internal" runtime tools interp dialects compiler/tests compiler/benches); then
  fail "a compiler internal named outside the compiler:"$'\n'"$hits"
fi

# Which crates depend on which (normal dependencies).
deps() { cargo tree --locked --quiet -p "$1" -e normal --prefix none --format '{p}' | awk '{print $1}' | sort -u; }
has() { grep -qx "$2" <<<"$1"; }
dialect=$(deps jitc-dialect)
for banned in jitc-compiler inkwell cudarc clap; do
  if has "$dialect" "$banned"; then fail "jitc-dialect depends on $banned"; fi
done
interp=$(deps jitc-interp)
for banned in jitc-compiler jitc-runtime inkwell cudarc clap; do
  if has "$interp" "$banned"; then fail "jitc-interp depends on $banned (it must stay an independent oracle)"; fi
done
for crate in jitc-compiler jitc-runtime; do
  if has "$(deps "$crate")" clap; then fail "$crate depends on clap (only tools/ parses flags)"; fi
done

# No import cycles among the modules of the dialect, compiler, interpreter
# and tools crates (runtime/src still has one: cuda <-> cuda::execute).
if ! python3 scripts/check-module-cycles.py dialects/src compiler/src interp/src tools/src; then
  failed=1
fi

if [ "$failed" -ne 0 ]; then
  exit 1
fi
echo "architecture: invariants hold"
