#!/usr/bin/env bash
# One device call for the int8 KV cache question (docs/serving.md, "The one lever left"): the prototype's
# kernels checked and timed against float16 (bench_int8_kv), the decode step of 16 to 64 sequences with them in
# the chain (bench_decode_step's "int8 KV cache (prototype)" rows beside the runner's float16 ones), on an H200
# the batch-32 torch.compile step that the 5x target compares against, and what
# int8 and e4m3 caches do to the logits of the full-size random model (probe_fp8_kv.py, three seeds). Build the
# two benches here first and carry them with the probe's inputs:
#   bash bench/gpu/build_torch_free.sh bench_int8_kv bench_decode_step
#   carry: build-gpu/bench_int8_kv build-gpu/bench_decode_step gpu-data/shared/tools
#          gpu-data/shared/fixtures/hunyuan/doc_en.png (38 MB)
#   run:   bash bench/gpu/run_int8_kv.sh        (about 6 minutes; SEEDS="1234" STEPS="32 64" for about 3;
#          SEEDS=" " skips the probe, whose figures are in docs/perf.md, call 219)
# Writes everything under $OUT (default /tmp/int8-out) and prints the tables.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/int8-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
SH=gpu-data/shared
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader | tee "$OUT/card.txt"

timeout 150 build-gpu/bench_int8_kv --batches 16,32,48,64 > "$OUT/int8_kv_1076.md" 2>&1; echo "bench_int8_kv exit $?"
cat "$OUT/int8_kv_1076.md"
timeout 60 build-gpu/bench_int8_kv --batches 32,64 --context 1204 > "$OUT/int8_kv_1204.md" 2>&1; echo "bench_int8_kv 1204 exit $?"
grep "^| [0-9]" "$OUT/int8_kv_1204.md"
for b in ${STEPS:-32 64 16 48}; do
  timeout 120 build-gpu/bench_decode_step --batches $b --rounds 3 --context 1076 > "$OUT/decode_step_$b.md" 2>&1
  echo "bench_decode_step $b exit $?"
  grep -E "as the runner|rotation inside attention \||int8|without attention|projections only" "$OUT/decode_step_$b.md"
done

python3 - "$SH" <<'PY'
import sys
from PIL import Image
doc = Image.open(sys.argv[1] + "/fixtures/hunyuan/doc_en.png").convert("RGB")
page = Image.new("RGB", (1024, 1024), "white")
for k in range(4):
    page.paste(doc.crop((0, 0, 800, 250)), (100, 20 + k * 250))
page.save("/tmp/page_1024.png")
PY
for s in ${SEEDS:-1234 7 99}; do
  timeout 150 python3 bench/gpu/probe_fp8_kv.py --images /tmp/page_1024.png --tools "$SH/tools" --seed $s \
    --dtypes float16,bfloat16 --kv "e4m3-head,int8-head,K int8-head,V int8-head" > "$OUT/probe_$s.md" 2>&1
  echo "probe seed $s exit $?"; grep "^| $s" "$OUT/probe_$s.md"
done

# The batch-32 compiled static-cache step, the 5x target's baseline, in the same call (on an H200 by default: its
# float16 figure there is the one missing from call 217; COMPILED=1 forces it, COMPILED=0 skips it).
if [ "${COMPILED:-auto}" = 1 ] || { [ "${COMPILED:-auto}" = auto ] && grep -q H200 "$OUT/card.txt"; }; then
  timeout 240 python3 "$SH/tools/hunyuan_reference.py" --size full --out /tmp/hyb --images /tmp/page_1024.png \
    --device cuda --dtype float16 --no-golden --bench-compiled --bench-batches 32 > "$OUT/compiled_32.txt" 2>&1
  echo "compiled baseline exit $?"; grep -i -E "compiled|step" "$OUT/compiled_32.txt" | tail -5
fi
