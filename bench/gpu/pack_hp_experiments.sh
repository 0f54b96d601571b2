#!/usr/bin/env bash
# Builds here (nvcc, no GPU needed) the binaries run_hp_experiments.sh runs on the GPU machine, and packs
# them into build-gpu/hp-benches.tar.xz (~35 MB: carry ["build-gpu/hp-benches.tar.xz"]):
#   bench_hp_base            bench_persistent_decode at BASE (a commit; default 41f5f23, before call 190's
#                            tail of 4 keys a warp and load-balanced attention clusters), from a git worktree;
#   bench_hp_trace_base      bench_hp_trace at BASE;
#   bench_persistent_decode  this tree's kernels;
#   bench_hp_trace           this tree's kernels with their trace (LECTOR_HP_TRACE);
#   bench_greedy_screen      the greedy screen's checks and times.
#   bash bench/gpu/pack_hp_experiments.sh [BASE]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BASE=${1:-41f5f23}
WT=/tmp/lector-hp-base
git worktree remove --force "$WT" 2>/dev/null || rm -rf "$WT"
git worktree add -q --detach "$WT" "$BASE"
(cd "$WT" && bash bench/gpu/build_torch_free.sh bench_persistent_decode bench_hp_trace > /dev/null)
mkdir -p build-gpu
cp "$WT/build-gpu/bench_persistent_decode" build-gpu/bench_hp_base
cp "$WT/build-gpu/bench_hp_trace" build-gpu/bench_hp_trace_base
git worktree remove --force "$WT"
BENCHES="bench_persistent_decode bench_hp_trace bench_greedy_screen"
# shellcheck disable=SC2086
bash bench/gpu/build_torch_free.sh $BENCHES > /dev/null
# shellcheck disable=SC2086
tar cJf build-gpu/hp-benches.tar.xz -C build-gpu bench_hp_base bench_hp_trace_base $BENCHES
ls -la build-gpu/hp-benches.tar.xz
