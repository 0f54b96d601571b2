#!/usr/bin/env bash
# PP-OCR on CUDA float16 on the GPU machine (issue 4, item 6): builds lector-cli and the ONNX graph tests
# (no CUDA kernels of ours are involved: PP-OCR runs on libtorch's), checks the graphs on the GPU against
# onnxruntime's outputs (tst_onnx_ppocr, with the CUDA-graph replays), then times the 20 SROIE dev receipts
# with the plans replayed as CUDA graphs, also with the depthwise convolutions on cuDNN, and eagerly:
#   - a fresh process on one receipt (what a user waits for: model load, first shapes, one page);
#   - a cold pass (a fresh process, every receipt once, one at a time: the first sight of each shape), and
#     the first receipt's stages against the rest, with the warm-up page at load and without it;
#   - warm passes one at a time (latency per stage), then every receipt x 4 at once (throughput);
# and scores each run's text with score.py. ONLY=tests stops after the graph tests. Carry gpu-data, .gpu-deps
# and models (bench/gpu/prepare_carry.sh).
source "$(dirname "$0")/lib.sh"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c 'import torch; print("torch", torch.__version__)'; } > "$W/machine.txt" 2>&1
sroie_ppm /tmp/imgs/sroie

step "configure + build"
configure_lector -DLECTOR_BUILD_TESTS=ON || exit 1
timeout 300 ninja -C "$B" -j"$(nproc)" lector-cli tst_onnx_ppocr tst_onnx_load tst_ocr_pipeline > "$W/build.log" 2>&1
echo "build exit $?"; grep -E "error:" "$W/build.log" | sort | uniq | head -20
CLI=$B/app/cli/lector-cli

step "graph tests on the GPU"
for t in tst_onnx_ppocr tst_onnx_load tst_ocr_pipeline; do
  exe=$(find "$B/tests" -name "$t" -type f -perm -u+x | head -1)
  [ -n "$exe" ] || { echo "$t: NOT BUILT"; continue; }
  timeout 120 "$exe" > "$W/$t.log" 2>&1; echo "exit $?" >> "$W/$t.log"
  printf '%-22s %s | %s\n' "$t" "$(grep -E '^[0-9]+ passed' "$W/$t.log" | tail -1)" "$(tail -1 "$W/$t.log")"
  grep -E "^FAIL" -A3 "$W/$t.log" | head -8
done
grep -E "round|cuda fp16 det" "$W/tst_onnx_ppocr.log" | head -12
[ "${ONLY:-}" = tests ] && { step "done"; exit 0; }

# secs CMD...: wall seconds of CMD (stdout and stderr to $W/last.txt)
secs() { local s; s=$(date +%s.%N); "$@" > "$W/last.txt" 2>&1; echo "exit $? $(python3 -c "import time;print(round(time.time()-$s,2))") s"; }
# Modes: graphs (the default: plans replayed as CUDA graphs, 1x1 and depthwise convolutions off cuDNN),
# pointwise (the same with the depthwise ones on cuDNN: LECTOR_ONNX_CUDA_CONV=pointwise), eager (the
# default routes without graphs, LECTOR_ONNX_CUDA_GRAPHS=0; warm passes only). The pipeline as it was up
# to call 166 (eager, every convolution on cuDNN) is LECTOR_ONNX_CUDA_GRAPHS=0 LECTOR_ONNX_CUDA_CONV=cudnn:
# its cold pass took 60 s, and its bursts meet new shapes again (call 167: 91 s for these warm passes).
for mode in graphs pointwise eager; do
  unset LECTOR_ONNX_CUDA_GRAPHS LECTOR_ONNX_CUDA_CONV
  [ $mode = eager ] && export LECTOR_ONNX_CUDA_GRAPHS=0
  [ $mode = pointwise ] && export LECTOR_ONNX_CUDA_CONV=pointwise
  if [ $mode != eager ]; then
    step "$mode: one receipt in a fresh process"
    secs "$CLI" recognize --device cuda --format jsonl /tmp/imgs/sroie/003.ppm; cut -c1-160 "$W/last.txt" | head -2
    step "$mode: cold pass (fresh process, each receipt once)"
    secs "$CLI" bench /tmp/imgs/sroie --device cuda --warmup 0 --repeat 1 --no-throughput --results "$W/sroie_cold_$mode.jsonl"
    cp "$W/last.txt" "$W/cold_$mode.txt"; grep -E "^(stage|preprocess|det|cls|rec|postprocess|total) |warning" "$W/cold_$mode.txt"
  fi
  step "$mode: 2 warm passes one at a time, then 4 copies of every receipt at once, twice"
  secs "$CLI" bench /tmp/imgs/sroie --device cuda --warmup 1 --repeat 2 --copies 4 --results "$W/sroie_warm_$mode.jsonl"
  cp "$W/last.txt" "$W/warm_$mode.txt"; grep -E "^(stage|preprocess|det|cls|rec|postprocess|total) |throughput|warning" "$W/warm_$mode.txt"
done
unset LECTOR_ONNX_CUDA_GRAPHS LECTOR_ONNX_CUDA_CONV
step "the first receipt after loading: with the warm-up page at load, and without (--no-load-warmup)"
secs "$CLI" bench /tmp/imgs/sroie --device cuda --warmup 0 --repeat 1 --no-throughput --no-load-warmup \
  --results "$W/sroie_cold_nowarmup.jsonl"
for f in sroie_cold_graphs sroie_cold_nowarmup; do
  python3 - "$W/$f.jsonl" "$f" <<'PY'
import json, statistics, sys
rows = [json.loads(l)["timing_ms"] for l in open(sys.argv[1])]
fmt = lambda t: " / ".join("%.1f" % t.get(k, 0) for k in ("det", "cls", "rec", "total"))
rest = {k: statistics.median(r.get(k, 0) for r in rows[1:]) for k in ("det", "cls", "rec", "total")}
print("%s: first receipt det / cls / rec / total ms %s; median of the other %d %s" % (sys.argv[2], fmt(rows[0]), len(rows) - 1, fmt(rest)))
PY
done
step "accuracy (score.py)"
score_sroie "graphs=$W/sroie_cold_graphs.jsonl" "pointwise=$W/sroie_cold_pointwise.jsonl"
step "done"
