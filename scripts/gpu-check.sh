#!/usr/bin/env bash
# The GPU checks, on a machine with an NVIDIA GPU, from the bundle that
# scripts/gpu-bundle.sh made (no Rust or LLVM needed there).
#
#   scripts/gpu-check.sh stash [DIR]   keeps the bundle parts found in DIR
#                                      (default .gpu) in /var/tmp/jitc-gpu,
#                                      for parts carried in separate calls
#   scripts/gpu-check.sh run [LOGS] [STEPS]
#                                      unpacks the stashed parts and runs
#                                      the steps (all, or those STEPS names,
#                                      comma-separated), logging each to
#                                      LOGS/NAME.log (default
#                                      /var/tmp/jitc-gpu/logs):
#     1. tests: the GPU tests, with JITC_REQUIRE_GPU=1 (every example
#        against the interpreter, device plans, device-resident runs,
#        errors, the math sweeps);
#     2. ptxas: the PTX of every example, for sm_80 and sm_90;
#     3. bench, torch: the jitc GPU bench, then PyTorch eager and
#        torch.compile on the same workloads;
#     4. memcheck, racecheck: the GPU tests again under compute-sanitizer
#        (every device access, atomics included; shared memory);
#     5. kernels, torch-kernels: the kernels of the memory-bound workloads,
#        jitc's, then PyTorch's (about four minutes), under Nsight Compute
#        (time, registers, occupancy, DRAM throughput), as CSV.
#   Steps 4 and 5 are skipped, and say so, where the tools are missing.
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
steps=${3:-tests,ptxas,bench,torch,memcheck,racecheck,kernels,torch-kernels}
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

# The tests and the bench read the examples from $CARGO_MANIFEST_DIR/../examples
# when it is set (jitc_test_support::examples_dir), else from the path
# they were built at, which names the machine that built them.
export CARGO_MANIFEST_DIR=$(pwd)/test-support

status=0
step() {
  local name=$1
  shift
  case ",$steps," in
    *",$name,"*) ;;
    *) return 0 ;;
  esac
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

sanitize() {
  if ! command -v compute-sanitizer >/dev/null; then
    echo "compute-sanitizer is not on PATH: not run"
    return 0
  fi
  JITC_REQUIRE_GPU=1 compute-sanitizer --tool "$1" --print-limit 20 --error-exitcode 1 "$bundle/bin/cuda-tests"
}
step memcheck sanitize memcheck
step racecheck sanitize racecheck

# Nsight Compute, when found, over one workload at a time, so that each
# CSV block names one workload; clocks left as they are (locked to base,
# every kernel looks slower).
profile() {
  local ncu
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
  if [ -z "$ncu" ]; then
    echo "ncu (Nsight Compute) not found: kernels not profiled"
    return 0
  fi
  local metrics=gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum
  local who=$1 workload
  for workload in sigmoid softmax instance layer; do
    echo "== kernels of $workload: $who"
    if [ "$who" = jitc ]; then
      JITC_BENCH_ONLY=$workload "$ncu" --clock-control none --csv --kernel-name regex:main_fused \
        --metrics "$metrics" "$bundle/bin/cuda-bench" || return 1
    else
      JITC_BENCH_ONLY=$workload "$ncu" --clock-control none --csv --metrics "$metrics" \
        python3 scripts/bench_torch.py || return 1
    fi
  done
}
step kernels profile jitc
# PyTorch's take about four minutes (Inductor autotunes under the profiler).
step torch-kernels profile torch
exit $status
