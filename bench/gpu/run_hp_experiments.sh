#!/usr/bin/env bash
# The head-parallel batch-1 step taken apart and its changes timed, in one short device call, from
# binaries built here: bash bench/gpu/pack_hp_experiments.sh, then carry ["build-gpu/hp-benches.tar.xz"].
#   1. the kernels before the K/V prefetch loaded its block ids together (bench_hp_base), this tree's
#      (bench_persistent_decode), this tree's with layer 0 launched after the work before it, not under PDL
#      (LECTOR_HP_FIRST_PDL=0), this tree's with the tail of 4 keys a warp (bench_hp_quads,
#      LECTOR_HP_TAIL_QUADS) and with the attention clusters placed by the spread and load-balancing
#      policies (bench_hp_spread, bench_hp_balance) in alternation, two rounds: each checked against the CPU reference (2 layers,
#      both dtypes, contexts 1 to 4101), then the step's time at the contexts of a page's decode and
#      around the jump at 64 -> 65 keys a CTA (1024 -> 1040);
#   2. the kernels traced (bench_hp_trace --trace) before the prefetch fix and now: every stage of both
#      kernels at those contexts;
#   3. the greedy screen's checks and times (bench_greedy_screen).
# Output: $OUT/hp_experiments.md (also printed). About 7 minutes (ROUNDS=1: about 4.5).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-/tmp/lector-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
[ ! -f build-gpu/hp-benches.tar.xz ] || tar xJf build-gpu/hp-benches.tar.xz -C build-gpu
CONTEXTS=${CONTEXTS:-1024,1040,1076,1152,1248,1344}
R=$OUT/hp_experiments.md
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  for round in $(seq 1 "${ROUNDS:-2}"); do
    # first-pdl-off: this tree with layer 0 launched after the work before it (LECTOR_HP_FIRST_PDL=0).
    for v in bench_hp_base bench_persistent_decode first-pdl-off bench_hp_quads bench_hp_spread bench_hp_balance; do
      b=$v env=()
      [ "$v" != first-pdl-off ] || b=bench_persistent_decode env=(LECTOR_HP_FIRST_PDL=0)
      [ -x "build-gpu/$b" ] || { echo "(build-gpu/$b missing)"; continue; }
      echo "### round $round: $v --head-parallel --contexts $CONTEXTS"
      env "${env[@]}" timeout 90 "build-gpu/$b" --head-parallel --contexts "$CONTEXTS"
      echo "($v exit $?)"
    done
  done
  for b in bench_hp_trace_base bench_hp_trace; do
    [ -x "build-gpu/$b" ] || { echo "(build-gpu/$b missing)"; continue; }
    echo "### $b --trace --contexts 1024,1040,1076,1345"
    timeout 90 "build-gpu/$b" --trace --contexts 1024,1040,1076,1345
    echo "($b exit $?)"
  done
  if [ -x build-gpu/bench_greedy_screen ]; then
    echo "### bench_greedy_screen"
    timeout 120 build-gpu/bench_greedy_screen
    echo "(bench_greedy_screen exit $?)"
  fi
} 2>&1 | tee "$R"
