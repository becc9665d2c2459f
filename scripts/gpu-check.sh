#!/usr/bin/env bash
# The GPU checks, on a machine with an NVIDIA GPU, from the bundle that
# scripts/gpu-bundle.sh made (no Rust or LLVM needed there).
#
#   scripts/gpu-check.sh stash [DIR]   keeps the bundle parts found in DIR
#                                      (default .gpu) in /var/tmp/jitc-gpu,
#                                      for parts carried in separate calls
#   scripts/gpu-check.sh run [LOGS]    unpacks the stashed parts and runs,
#                                      logging each step to LOGS (default
#                                      /var/tmp/jitc-gpu/logs):
#     1. the GPU tests, with JITC_REQUIRE_GPU=1 (every example against the
#        interpreter, device plans, device-resident runs, errors);
#     2. ptxas on the PTX of every example, for sm_80 and sm_90;
#     3. the jitc GPU bench, then PyTorch eager on the same workloads.
#
# Exit status: that of the first step that failed, else 0.
set -uo pipefail

stash=/var/tmp/jitc-gpu
mode=${1:-}

case $mode in
  stash)
    mkdir -p "$stash"
    cp -v "${2:-.gpu}"/bundle.tar.xz.part* "$stash/"
    exit 0
    ;;
  run) ;;
  *)
    echo "usage: scripts/gpu-check.sh stash [DIR] | run [LOGS]" >&2
    exit 2
    ;;
esac

logs=${2:-$stash/logs}
mkdir -p "$logs"
if ! ls "$stash"/bundle.tar.xz.part* >/dev/null 2>&1; then
  echo "gpu-check: no bundle parts in $stash; run 'scripts/gpu-check.sh stash' first" >&2
  exit 2
fi
rm -rf "$stash/bundle"
cat "$stash"/bundle.tar.xz.part* | xz -d | tar -C "$stash" -xf - || {
  echo "gpu-check: the bundle does not unpack; are all parts stashed?" >&2
  exit 2
}
bundle=$stash/bundle
export PATH=$PATH:/usr/local/cuda/bin
export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# The tests read ../examples from the directory they were built in.
built_at=$(cat "$bundle/built-at")
if [ ! -e "$built_at/examples" ]; then
  mkdir -p "$(dirname "$built_at")"
  ln -sfn "$(pwd)" "$built_at"
fi

status=0
step() {
  local name=$1
  shift
  echo "== $name" | tee "$logs/$name.log"
  "$@" 2>&1 | tee -a "$logs/$name.log"
  local code=${PIPESTATUS[0]}
  echo "== $name: exit $code" | tee -a "$logs/$name.log"
  if [ "$code" -ne 0 ] && [ "$status" -eq 0 ]; then
    status=$code
  fi
}

ptx() {
  if ! command -v ptxas >/dev/null; then
    echo "ptxas is not on PATH (nor in /usr/local/cuda/bin): PTX not checked"
    return 1
  fi
  local failed=0
  for arch in sm_80 sm_90; do
    for example in examples/*.mlir; do
      local file=/tmp/$(basename "$example" .mlir)-$arch.ptx
      if ! "$bundle/bin/jitc" compile --target nvptx --gpu-arch "$arch" --emit ptx "$example" > "$file"; then
        echo "jitc failed on $example ($arch)"
        failed=1
      elif ! ptxas -arch="$arch" "$file" -o /dev/null; then
        echo "ptxas rejected $example ($arch)"
        failed=1
      else
        echo "ptxas accepts $example ($arch): $(grep -c '^.visible .entry' "$file") entries"
      fi
    done
  done
  return $failed
}

echo "bundle of commit $(cat "$bundle/commit"); GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)"
step tests env JITC_REQUIRE_GPU=1 "$bundle/bin/cuda-tests"
step ptxas ptx
step bench "$bundle/bin/cuda-bench"
step torch python3 scripts/bench_torch.py
exit $status
