#!/usr/bin/env bash
# The head-parallel batch-1 step taken apart and its changes timed, in one short device call, from
# binaries built here: bash bench/gpu/pack_hp_experiments.sh, then carry ["build-gpu/hp-benches.tar.xz"].
#   1. the kernels of BASE (bench_hp_base; pack_hp_experiments.sh's default: before call 190's tail of 4
#      keys a warp and load-balanced attention clusters) and this tree's (bench_persistent_decode), and any
#      other bench_hp_* binary packed beside them that VARIANTS names (call 195 timed later PDL triggers so); in alternation, two
#      rounds: each checked against the CPU reference (2 layers, both dtypes, contexts 1 to 4101), then the step's time at
#      the contexts of a page's decode (VARIANTS="..." picks; first-pdl-off, policy-default and policy-spread
#      are this tree with LECTOR_HP_FIRST_PDL=0, LECTOR_HP_CLUSTER_POLICY=0, =1);
#   2. the kernels traced (bench_hp_trace --trace) at BASE and now: every stage of both kernels at contexts
#      1024, 1040, 1076 and 1345;
#   3. the greedy screen's checks and times (bench_greedy_screen).
# Output: $OUT/hp_experiments.md (also printed). About 3 minutes (call 190: 155 s with six variants and two traces).
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
    for v in ${VARIANTS:-bench_hp_base bench_persistent_decode}; do
      b=bench_persistent_decode env=()
      case $v in
        bench_hp_*) b=$v ;;
        first-pdl-off) env=(LECTOR_HP_FIRST_PDL=0) ;;
        policy-default) env=(LECTOR_HP_CLUSTER_POLICY=0) ;;
        policy-spread) env=(LECTOR_HP_CLUSTER_POLICY=1) ;;
      esac
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
