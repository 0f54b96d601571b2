#!/usr/bin/env bash
# The head-parallel batch-1 step taken apart and its experiment timed, in one short device call, from
# binaries built here (bash bench/gpu/build_torch_free.sh bench_persistent_decode bench_hp_quads
# bench_hp_trace; carry build-gpu/bench_persistent_decode, build-gpu/bench_hp_quads and
# build-gpu/bench_hp_trace, ~42 MB):
#   1. the shipped kernels and the tail of 4 keys a warp (LECTOR_HP_TAIL_QUADS) in alternation, two rounds:
#      each checked against the CPU reference (2 layers, both dtypes, contexts 1 to 4101), then the step's
#      time at the contexts of a page's decode and around the jump at 64 -> 65 keys a CTA (1024 -> 1040);
#   2. the shipped kernels' trace (bench_hp_trace --trace): every stage of both kernels at those contexts;
#   3. where build-gpu/bench_greedy_screen was carried too (13 MB more): the greedy screen's checks and times.
# Output: $OUT/hp_experiments.md (also printed). About 3 minutes.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-/tmp/lector-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
CONTEXTS=${CONTEXTS:-1024,1040,1076,1152,1248,1344}
R=$OUT/hp_experiments.md
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  for round in 1 2; do
    for b in bench_persistent_decode bench_hp_quads; do
      echo "### round $round: $b --head-parallel --contexts $CONTEXTS"
      timeout 150 "build-gpu/$b" --head-parallel --contexts "$CONTEXTS"
      echo "($b exit $?)"
    done
  done
  echo "### bench_hp_trace --trace --contexts 1024,1040,1076,1345"
  timeout 150 build-gpu/bench_hp_trace --trace --contexts 1024,1040,1076,1345
  echo "(bench_hp_trace exit $?)"
  if [ -x build-gpu/bench_greedy_screen ]; then
    echo "### bench_greedy_screen"
    timeout 120 build-gpu/bench_greedy_screen
    echo "(bench_greedy_screen exit $?)"
  fi
} 2>&1 | tee "$R"
