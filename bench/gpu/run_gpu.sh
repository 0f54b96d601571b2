#!/usr/bin/env bash
# One GPU-machine run for gpu/: configure and build the kernels-only project (bench/gpu/CMakeLists.txt)
# against the installed PyTorch's CUDA libtorch for sm_90, run every kernel test, then the benchmark
# (paged decode attention at batch 64 / context 4096 against SDPA and the measured copy bandwidth,
# plus the other kernels). Logs and the results table go into $OUT/gpu-results.tar.gz; the summary
# and the table are also printed last (they are what the device tool's reply shows).
#   usage (repository root, on the GPU machine): bash bench/gpu/run_gpu.sh   (TESTS="tst_a tst_b" runs only those)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/build-gpu/out}
WORK=/tmp/gpu-results   # packed into $OUT at the end: the device tool returns at most 8 files
BUILD=${LECTOR_KERNELS_BUILD:-/tmp/lector-kernels}
mkdir -p "$WORK" "$OUT"
cd "$ROOT"
step() { echo "== $* ($(date +%T))"; }

step "machine"
{ nvidia-smi; nvcc --version; cmake --version | head -1; g++ --version | head -1;
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'; } > "$WORK/machine.txt" 2>&1
grep -E "H200|H100|Driver|release|torch" "$WORK/machine.txt" | head -5

step "configure"
TORCH_PREFIX=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
if ! cmake -S bench/gpu -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DLECTOR_CUDA=ON > "$WORK/configure.log" 2>&1; then
  tail -40 "$WORK/configure.log"; tar czf "$OUT/gpu-results.tar.gz" -C /tmp gpu-results; exit 1
fi

step "build"
if ! ninja -C "$BUILD" -j"$(nproc)" > "$WORK/build.log" 2>&1; then
  grep -E "error|Error" -A3 "$WORK/build.log" | head -60; tar czf "$OUT/gpu-results.tar.gz" -C /tmp gpu-results; exit 1
fi
# Registers, shared memory and spills of every kernel (METHOD.md: read what costs no device time).
cuobjdump -res-usage "$BUILD"/gpu/liblector_gpu_kernels.a > "$WORK/resource-usage.txt" 2>&1 || true
grep -E "Function|REG|STACK|LOCAL" "$WORK/resource-usage.txt" | paste - - | \
  sed -E 's/Function ([^:]*):.*REG:([0-9]+).*STACK:([0-9]+).*SHARED:([0-9]+).*LOCAL:([0-9]+).*/\1 reg=\2 stack=\3 smem=\4 local=\5/' \
  > "$WORK/resource-summary.txt" 2>/dev/null || true

step "kernel tests"
TESTS=${TESTS:-"tst_kv_cache_write tst_paged_decode_attention tst_paged_prefill_attention tst_rms_norm tst_qk_norm_rope tst_silu_and_mul tst_sample_tokens tst_greedy_screen tst_skinny_gemm tst_persistent_decode"}
pids=()
for t in $TESTS; do
  ( OMP_NUM_THREADS=2 timeout 240 "$BUILD/tests/kernels/$t" > "$WORK/$t.log" 2>&1; echo "exit $?" >> "$WORK/$t.log" ) &
  pids+=($!)
done
wait "${pids[@]}"
failed=0
for t in $TESTS; do
  printf '%-30s %s | %s\n' "$t" "$(grep -E '^[0-9]+ passed' "$WORK/$t.log" | tail -1)" "$(tail -1 "$WORK/$t.log")"
  grep -q '^exit 0' "$WORK/$t.log" || { failed=1; grep -E "^FAIL" -A3 "$WORK/$t.log" | head -30; }
done

step "benchmark"
timeout 200 "$BUILD/bench_paged_attention" "$WORK/bench.md" > "$WORK/bench.log" 2>&1
echo "bench exit $?"

tar czf "$OUT/gpu-results.tar.gz" -C /tmp gpu-results
cp "$WORK/bench.md" "$OUT/" 2>/dev/null
step "done (tests failed: $failed)"
echo
cat "$WORK/bench.md" 2>/dev/null || tail -30 "$WORK/bench.log"
exit $failed
