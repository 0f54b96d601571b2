#!/usr/bin/env bash
# One GPU-machine run of the vision tower's attention kernel alone (gpu/kernels/vision_attention.cu):
# builds tst_vision_attention and bench_paged_attention (kernels for sm_90 / sm_90a only), runs the test
# (the kernel against the CPU reference and dense attention, float16 and bfloat16), then
# bench_paged_attention --vision (the kernel against SDPA) and the kernel's SASS wgmma/wait counts
# (one WARPGROUP.DEPBAR per HGMMA means ptxas serialized them). Same carry as run_serving.sh; results in $OUT/results.tar.gz.
source "$(dirname "$0")/lib.sh"
step "configure + build"
configure_lector -DCMAKE_CUDA_ARCHITECTURES=90 -DLECTOR_CUDA=ON -DLECTOR_BUILD_TESTS=ON || exit 1
timeout 400 ninja -C "$B" -k 0 -j"$(nproc)" tst_vision_attention bench_paged_attention > "$W/build.log" 2>&1
echo "build exit $?"; grep -E "error|C75[0-9]+" "$W/build.log" | sed 's/in the function.*//' | sort | uniq -c | head -20
TST=$(find "$B/tests" -name tst_vision_attention -type f -perm -u+x | head -1)
step "tst_vision_attention"
timeout 120 "$TST" > "$W/tst_vision_attention.log" 2>&1; rc=$?; echo "exit $rc" >> "$W/tst_vision_attention.log"
grep -E "nmse|PASS|FAIL|SKIP|passed" "$W/tst_vision_attention.log" | cut -c1-170
[ $rc -eq 0 ] || grep -E "^FAIL" -A3 "$W/tst_vision_attention.log" | head -12
step "bench_paged_attention --vision"
timeout 120 "$B/bench_paged_attention" --vision "$W/vision_attention.md" > "$W/vision_bench.log" 2>&1; echo "bench exit $?"
grep -E "^\||^#" "$W/vision_bench.log"
step "SASS of the kernel"
LIB=$(find "$B" -name "liblector_gpu_kernels_sm90a.a" | head -1)
if command -v cuobjdump > /dev/null && [ -n "$LIB" ]; then
  cuobjdump -sass "$LIB" > "$W/vision_attention.sass" 2>&1
  grep -oE "HGMMA[.A-Z0-9x]*|WARPGROUP\.[A-Z]*|WARPSYNC|BAR\.SYNC[.A-Z]*|DEPBAR[.A-Z]*" "$W/vision_attention.sass" | sort | uniq -c
fi
step "done"
