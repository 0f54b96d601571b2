#!/usr/bin/env bash
# A shorter GPU-machine run than run_all.sh: builds lector-cli, then times PP-OCR on CUDA float16 over the
# SROIE dev receipts (warm pass, results scored with score.py) and checks clean exits. Same carry as run_all.sh.
source "$(dirname "$0")/lib.sh"
sroie_ppm /tmp/imgs/sroie
configure_lector -DLECTOR_BUILD_TESTS=ON || exit 1
timeout 200 ninja -C "$B" -j"$(nproc)" lector-cli tst_safetensors tst_hunyuan_text > "$W/build.log" 2>&1; echo "build exit $?"
for t in tst_safetensors tst_hunyuan_text; do
  timeout 60 "$(find "$B/tests" -name $t -type f | head -1)" > "$W/$t.log" 2>&1; echo "$t exit $? | $(tail -1 "$W/$t.log")"
done
CLI=$B/app/cli/lector-cli
s=$(date +%s.%N)
timeout 150 "$CLI" bench /tmp/imgs/sroie --device cuda --warmup 1 --repeat 1 --results "$W/sroie_cuda.jsonl" > "$W/bench_cuda.txt" 2>&1
echo "bench cuda exit $? wall $(python3 -c "import time;print(round(time.time()-$s,1))") s"; cat "$W/bench_cuda.txt"
score_sroie "cuda=$W/sroie_cuda.jsonl"
"$CLI" recognize --device cuda --format jsonl /tmp/imgs/sroie/003.ppm > "$W/one.jsonl" 2>&1; echo "recognize exit $?"; cut -c1-200 "$W/one.jsonl"
