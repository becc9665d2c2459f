#!/usr/bin/env bash
# Packs what the GPU checks need for a machine with an NVIDIA GPU but no
# Rust or LLVM (such as the device machine lent to some sessions): release
# builds of `jitc`, the GPU test binary (runtime/tests/cuda.rs) and the
# GPU bench (runtime/benches/cuda.rs), with every shared library they load
# except glibc's, libgcc's and libstdc++'s, compressed and cut into parts
# of at most 48 MiB (the device tool carries 64 MiB per call, the working
# tree included).
#
#   scripts/gpu-bundle.sh [OUT_DIR]      (default .gpu, which git ignores)
#
# On the GPU machine, scripts/gpu-check.sh reassembles the parts and runs
# the checks. Run this from the repository root after scripts/setup.sh.
set -euo pipefail

out=${1:-.gpu}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

executable() {
  # The executable cargo reports for a test or bench target.
  python3 -c '
import json, sys
paths = [m["executable"] for m in map(json.loads, sys.stdin)
         if m.get("reason") == "compiler-artifact" and m.get("executable")
         and m["target"]["name"] == sys.argv[1]]
print(paths[-1])' "$1"
}

echo "gpu-bundle: building release binaries" >&2
cargo build --release -p jitc
test_bin=$(cargo test --release -p jitc-runtime --test cuda --no-run --message-format=json | executable cuda)
bench_bin=$(cargo bench -p jitc-runtime --bench cuda --no-run --message-format=json | executable cuda)

mkdir -p "$stage/bundle/bin" "$stage/bundle/lib"
cp "${CARGO_TARGET_DIR:-target}/release/jitc" "$stage/bundle/bin/jitc"
cp "$test_bin" "$stage/bundle/bin/cuda-tests"
cp "$bench_bin" "$stage/bundle/bin/cuda-bench"
strip "$stage"/bundle/bin/*

# The libraries, as this machine's loader resolves them.
for binary in "$stage"/bundle/bin/*; do
  ldd "$binary" | awk '/=> \// { print $3 }'
done | sort -u | while read -r library; do
  case $(basename "$library") in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libgcc_s.so.*|libstdc++.so.*) ;;
    *) cp -L "$library" "$stage/bundle/lib/" ;;
  esac
done

git describe --always --abbrev=40 --dirty > "$stage/bundle/commit"

echo "gpu-bundle: compressing $(du -sh "$stage/bundle" | cut -f1) (takes minutes)" >&2
rm -rf "$out"
mkdir -p "$out"
tar -C "$stage" -cf - bundle | xz -T0 -9 | split -b 48M -d - "$out/bundle.tar.xz.part"
ls -l "$out" >&2
echo "gpu-bundle: carry each part to the GPU machine in its own call; see scripts/gpu-check.sh" >&2
