#!/usr/bin/env bash
# jitc's fuzz targets (fuzz/, cargo-fuzz and libFuzzer) on a seed corpus
# made from examples/ and test/.
#
#   bash scripts/fuzz.sh smoke             every target for a fixed number of
#                                          runs from a fixed seed (about 10 s
#                                          each here), so the smoke in the
#                                          test command is the same every time
#   bash scripts/fuzz.sh campaign [RUNS] [SECONDS]
#                                          every target for RUNS executions
#                                          (default 1000000) or SECONDS
#                                          (default: no limit), whichever
#                                          comes first; JITC_FUZZ_JOBS
#                                          targets at a time (default 1)
#   bash scripts/fuzz.sh run TARGET [libFuzzer flags...]
#
# A crash, panic, abort or timeout fails the script; libFuzzer leaves the
# input that caused it in $work/artifacts/ and prints how to reproduce it.
# Builds need cargo-fuzz (installed here when missing) but no nightly Rust:
# the targets build with `-s none` (no sanitizer; Rust's own checks,
# debug assertions and overflow checks are on).
#
# JITC_FUZZ_TARGET_DIR: where the instrumented build goes (default
# $CARGO_TARGET_DIR/fuzz); JITC_FUZZ_SKIP_BUILD=1 runs what is built there.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-smoke}
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
work=$target_dir/fuzz-work
fuzz_target_dir=${JITC_FUZZ_TARGET_DIR:-$target_dir/fuzz}
targets=(parse_verify passes codegen inputs run differential host)
# The targets compile thousands of random programs: none of them belongs in
# a disk cache.
export JITC_CACHE=0
# Runs of each target in the smoke: about 10 seconds each on the 2-core
# development machine.
declare -A smoke_runs=(
  [parse_verify]=300000 [passes]=80000 [codegen]=1200
  [inputs]=150000 [run]=150000 [differential]=1500 [host]=300
)

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz" >&2
  cargo install --quiet --locked cargo-fuzz --version 0.13.2
fi

build() {
  [ -n "${JITC_FUZZ_SKIP_BUILD:-}" ] && return 0
  echo "fuzz: building the targets (instrumented release build)" >&2
  (cd fuzz && cargo fuzz build -O -a -s none --target-dir "$fuzz_target_dir" >&2)
}

# Seeds: every example and every `// -----` chunk of the lit tests for the
# module targets; the .npy files and some literals for the input readers.
seed() {
  local dir=$work/seeds
  rm -rf "$dir"
  mkdir -p "$dir/mlir" "$dir/inputs" "$dir/differential"
  python3 - "$dir" <<'PY'
import glob, hashlib, os, sys
out = sys.argv[1]
def put(folder, data):
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(out, folder, name), "wb") as f:
        f.write(data)
for path in sorted(glob.glob("examples/*.mlir") + glob.glob("test/**/*.mlir", recursive=True)):
    text = open(path, encoding="utf-8", errors="replace").read()
    for chunk in text.split("// -----"):
        if chunk.strip():
            put("mlir", chunk.encode())
for path in glob.glob("test/**/*.npy", recursive=True):
    put("inputs", open(path, "rb").read())
for literal in ["2x3xf32=[1 2 3][4 5 6]", "f32=2.5", "4xi1=1 0 1 1", "2x2xi64=9000000000 -1 0 7", "3xf64=nan -inf 1e-310"]:
    put("inputs", literal.encode())
for n in range(16):
    put("differential", hashlib.sha256(str(n).encode()).digest())
PY
}

seeds_of() {
  case $1 in
    inputs) echo "$work/seeds/inputs" ;;
    differential | host) echo "$work/seeds/differential" ;;
    *) echo "$work/seeds/mlir" ;;
  esac
}

# Runs one target on the corpus folder $corpus_root/TARGET (where libFuzzer
# adds what it finds) and the seeds.
run_target() {
  local target=$1
  shift
  local corpus=$corpus_root/$target
  mkdir -p "$corpus" "$work/artifacts"
  local log=$work/$target.log
  local binary=$fuzz_target_dir/x86_64-unknown-linux-gnu/release/$target
  # A crash handler that deadlocks on a corrupted heap (the heap
  # corruption of docs/fuzzing.md once left one waiting on a lock inside
  # malloc for good) would hang the test command: the smoke kills a target
  # after JITC_FUZZ_SMOKE_SECONDS (600 by default; a target takes 10-70 s).
  local limit=()
  if [ "$mode" = smoke ]; then
    limit=(timeout -s KILL "${JITC_FUZZ_SMOKE_SECONDS:-600}")
  fi
  set +e
  "${limit[@]}" "$binary" "$corpus" "$(seeds_of "$target")" -artifact_prefix="$work/artifacts/$target-" \
    -rss_limit_mb=6144 -timeout=60 -print_final_stats=1 "$@" >"$log" 2>&1
  local status=$?
  set -e
  local runs seconds
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  seconds=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\2/p' "$log" | tail -n 1)
  if [ "$status" -ne 0 ]; then
    echo "fuzz $target: FAILED (exit $status) after ${runs:-?} runs; log: $log" >&2
    grep -aE "panicked|ERROR: libFuzzer|deadly signal|Test unit written|SUMMARY" "$log" | head -n 20 >&2 || true
    return 1
  fi
  echo "fuzz $target: ${runs:-?} runs in ${seconds:-?} s, corpus $(ls "$corpus" | wc -l) inputs, no crash"
}

# Builds, seeds and runs every target with the libFuzzer flags given,
# JITC_FUZZ_JOBS of them at a time.
run_all() {
  build
  seed
  local jobs=${JITC_FUZZ_JOBS:-1} failed=0 running=0 target
  for target in "${targets[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
      wait -n || failed=$((failed + 1))
      running=$((running - 1))
    fi
    run_target "$target" "$@" &
    running=$((running + 1))
  done
  while [ "$running" -gt 0 ]; do
    wait -n || failed=$((failed + 1))
    running=$((running - 1))
  done
  echo "fuzz: $((${#targets[@]} - failed)) passed, $failed failed"
  [ "$failed" -eq 0 ]
}

case $mode in
  smoke)
    # A fresh corpus, a fixed seed and a fixed number of runs per target:
    # the same inputs every time, so the test command cannot fail on a
    # crash it did not find the time before (the campaign looks for new
    # ones).
    corpus_root=$work/smoke-corpus
    rm -rf "$corpus_root"
    build
    seed
    failed=0
    for target in "${targets[@]}"; do
      run_target "$target" -seed=1 -runs="${smoke_runs[$target]}" || failed=$((failed + 1))
    done
    echo "fuzz: $((${#targets[@]} - failed)) passed, $failed failed"
    [ "$failed" -eq 0 ]
    ;;
  campaign)
    # The campaign's corpus grows across campaigns.
    corpus_root=$work/corpus
    limits=(-runs="${2:-1000000}")
    if [ -n "${3:-}" ]; then limits+=(-max_total_time="$3"); fi
    run_all "${limits[@]}"
    ;;
  run)
    target=${2:?usage: fuzz.sh run TARGET [libFuzzer flags...]}
    shift 2
    corpus_root=$work/corpus
    build
    seed
    run_target "$target" "$@"
    ;;
  *)
    echo "usage: bash scripts/fuzz.sh smoke | campaign [RUNS] [SECONDS] | run TARGET [flags]" >&2
    exit 2
    ;;
esac
