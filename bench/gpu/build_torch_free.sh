#!/usr/bin/env bash
# Builds the torch-free GPU benches (bench_decode_attention, bench_decode_step, bench_prefill,
# bench_skinny_gemm, bench_persistent_decode, bench_vision_attention, bench_greedy_screen, bench_sync_latency,
# bench_persistent_skeleton, bench_head_parallel_layers, bench_head_parallel_rows, bench_int8_kv; and a build of
# bench_persistent_decode's source with a define: bench_hp_trace, the head-parallel kernels' trace built in)
# here with nvcc for sm_90, into build-gpu/ (git-ignored),
# so a device call can carry them (over 90 MB in all, more than the 64 MB a call carries: carry the binaries
# a call needs, e.g. ["build-gpu/bench_persistent_decode"]) and spend its minutes running
# instead of building. Each kernel and reference is compiled once into build-gpu-obj/ (not carried;
# reused while newer than its source and every header), two at a time. On the GPU machine:
#   export LD_LIBRARY_PATH=/usr/local/cuda/lib64; build-gpu/bench_prefill
#   bash bench/gpu/build_torch_free.sh [bench...]   (default: all twelve; the bench_hp_* builds only when named)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
FLAGS=(-std=c++20 -O3 --expt-relaxed-constexpr -I.)
OUT=build-gpu
OBJ=build-gpu-obj
mkdir -p "$OUT" "$OBJ"

# bench -> the kernels and references it links besides its own source (the nvcc lines in its header)
declare -A DEPS=(
  [bench_decode_attention]="gpu/kernels/paged_decode_attention.cu gpu/ref/paged_decode_attention_ref.cpp"
  [bench_decode_step]="gpu/kernels/skinny_gemm.cu gpu/kernels/skinny_gemm_tc.cu gpu/kernels/skinny_gemm_wg.cu gpu/kernels/rms_norm.cu gpu/kernels/qk_norm_rope.cu gpu/kernels/paged_decode_attention.cu gpu/kernels/silu_and_mul.cu"
  [bench_prefill]="gpu/kernels/paged_prefill_attention.cu gpu/kernels/paged_decode_attention.cu gpu/kernels/qk_norm_rope.cu gpu/kernels/rms_norm.cu gpu/kernels/silu_and_mul.cu gpu/ref/paged_prefill_attention_ref.cpp"
  [bench_skinny_gemm]="gpu/kernels/skinny_gemm.cu gpu/kernels/skinny_gemm_tc.cu gpu/kernels/skinny_gemm_wg.cu gpu/kernels/rms_norm.cu gpu/ref/skinny_gemm_ref.cpp gpu/ref/rms_norm_ref.cpp"
  [bench_persistent_decode]="gpu/kernels/persistent_decode.cu gpu/kernels/head_parallel_decode.cu gpu/kernels/skinny_gemm.cu gpu/kernels/skinny_gemm_tc.cu gpu/kernels/skinny_gemm_wg.cu $(ls gpu/ref/*.cpp | tr '\n' ' ')"
  [bench_vision_attention]="gpu/kernels/vision_attention.cu gpu/ref/vision_attention_ref.cpp"
  [bench_greedy_screen]="gpu/kernels/greedy_screen.cu gpu/kernels/sample_tokens.cu gpu/kernels/skinny_gemm.cu gpu/kernels/skinny_gemm_tc.cu gpu/kernels/skinny_gemm_wg.cu gpu/ref/greedy_screen_ref.cpp"
  [bench_sync_latency]=""
  [bench_persistent_skeleton]=""
  [bench_head_parallel_layers]=""
  [bench_head_parallel_rows]=""
  [bench_int8_kv]="gpu/kernels/paged_decode_attention.cu gpu/kernels/kv_cache_write.cu gpu/kernels/qk_norm_rope.cu gpu/ref/paged_decode_attention_ref.cpp"
)
declare -A LIBS=([bench_persistent_decode]="-lcuda" [bench_decode_step]="-lcublas -lcuda" [bench_prefill]="-lcublas" [bench_skinny_gemm]="-lcublas -lcublasLt")
# A bench built from another's source (its dependencies and libraries too) with a define. The sources that
# name the define themselves get objects of their own (build-gpu-obj/<define>/); the others are shared.
# (Call 195's bench_hp_attn_trigger1/2 and bench_hp_mlp_trigger1 were builds like this; docs/perf.md.)
declare -A SOURCE=([bench_hp_trace]=bench_persistent_decode)
declare -A DEFINES=([bench_hp_trace]=LECTOR_HP_TRACE)
BENCHES=("$@")
[ ${#BENCHES[@]} -gt 0 ] || BENCHES=(bench_decode_attention bench_decode_step bench_prefill bench_skinny_gemm bench_persistent_decode bench_vision_attention bench_greedy_screen bench_sync_latency bench_persistent_skeleton bench_head_parallel_layers bench_head_parallel_rows bench_int8_kv)

# objOf SOURCE [DEFINE]
objOf() { echo "$OBJ/${2:+$2/}$(echo "$1" | tr '/' '_').o"; }
# defineFor SOURCE DEFINE: DEFINE where SOURCE names it (its name before any "="), else nothing.
defineFor() { [ -n "$2" ] && grep -q "${2%%=*}" "$1" && echo "$2" || true; }
# Any source whose object is missing or older than the source or a header under gpu/ or bench/gpu/.
newestHeader=$(find gpu bench/gpu -name '*.h' -o -name '*.cuh' | xargs ls -t | head -1)
declare -A SEEN=()
TODO=()  # "source define" pairs
for b in "${BENCHES[@]}"; do
  base=${SOURCE[$b]:-$b}
  [ -n "${DEPS[$base]+x}" ] || { echo "unknown bench $b" >&2; exit 1; }
  for src in "bench/gpu/$base.cu" ${DEPS[$base]}; do
    def=$(defineFor "$src" "${DEFINES[$b]:-}")
    [ -z "${SEEN[$src $def]+x}" ] || continue
    SEEN[$src $def]=1
    obj=$(objOf "$src" "$def")
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$newestHeader" -nt "$obj" ]; then TODO+=("$src $def"); fi
  done
done
echo "compiling ${#TODO[@]} sources, two at a time"
# wgmma kernels need the arch-specific target.
archOf() { case "$1" in gpu/kernels/vision_attention.cu|gpu/kernels/skinny_gemm_wg.cu) echo -arch=sm_90a ;; *) echo -arch=sm_90 ;; esac; }
compile() {
  mkdir -p "$(dirname "$(objOf "$1" "${2:-}")")"
  "$NVCC" "${FLAGS[@]}" ${2:+-D$2} "$(archOf "$1")" -c "$1" -o "$(objOf "$1" "${2:-}")"
}
running=0
for item in "${TODO[@]}"; do
  # shellcheck disable=SC2086
  compile $item &
  running=$((running + 1))
  if [ "$running" -ge 2 ]; then wait -n; running=$((running - 1)); fi
done
while [ "$running" -gt 0 ]; do wait -n; running=$((running - 1)); done
for b in "${BENCHES[@]}"; do
  base=${SOURCE[$b]:-$b}
  objs=""
  for src in "bench/gpu/$base.cu" ${DEPS[$base]}; do objs="$objs $(objOf "$src" "$(defineFor "$src" "${DEFINES[$b]:-}")")"; done
  # shellcheck disable=SC2086
  "$NVCC" "${FLAGS[@]}" -arch=sm_90 $objs ${LIBS[$base]:-} -o "$OUT/$b"
  echo "$OUT/$b"
done
du -sh "$OUT"
