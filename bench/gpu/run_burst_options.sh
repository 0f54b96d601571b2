#!/usr/bin/env bash
# The engine's options that shape bursts and first requests, on the GPU machine: the --size full random
# HunyuanOCR model of tools/hunyuan_reference.py, float16, distinct 1024x1024 pages (make_pages), 256
# forced new tokens, through lector-cli bench. Three sections (ONLY=budgets, warmup or load runs one):
#   - budgets: 64 and 256 pages at once at each pair of --max-tokens-per-step (prefill + decode tokens a
#     forward) and --vision-images-per-step (pages through the tower a step); the first pair runs again
#     last, as the run's drift. BUDGETS="tokens/images ..." overrides the pairs.
#   - warmup: the first page and the first 64-page burst after loading, with the warm-up pages at load
#     and without them (--no-load-warmup), in turn, each in a fresh process.
#   - load: the engine's load time with the runner's tuning measured (an empty cache folder), then kept from
#     that start, then measured again and kept anew (--retune), then kept: one page alone each time, then
#     64 pages at once, each a fresh process.
# Same carry as run_serving.sh; results in $OUT/results.tar.gz (budget.md, warmup.md, load.md).
source "$(dirname "$0")/lib.sh"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c 'import torch; print("torch", torch.__version__)'; } > "$W/machine.txt" 2>&1
section() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }

step "random model (background) + build"
mkdir -p /tmp/pages
( make_page /tmp/page_1024.png
  timeout 200 python3 "$SH/tools/hunyuan_reference.py" --size full --out /tmp/hy --images /tmp/page_1024.png \
    --device cpu --no-golden > "$W/reference.log" 2>&1; echo "model exit $?" >> "$W/reference.log"
  make_tokenizer /tmp/hy/model
  make_pages /tmp/pages 256 > /dev/null; mkdir -p /tmp/pages64
  for i in $(seq 0 63); do ln -sf "$(printf '/tmp/pages/p%03d.ppm' "$i")" /tmp/pages64/; done ) &
REF=$!
configure_lector -DCMAKE_CUDA_ARCHITECTURES=90 -DLECTOR_CUDA=ON || exit 1
timeout 400 ninja -C "$B" -j"$(nproc)" lector-cli > "$W/build.log" 2>&1
echo "build exit $?"; grep -E "error:" "$W/build.log" | sort | uniq | head -20
CLI=$B/app/cli/lector-cli
wait $REF; tail -1 "$W/reference.log"
H="--model hunyuan-ocr --model-dir /tmp/hy/model --device cuda --preset spotting --max-new-tokens 256 --ignore-eos"

if section budgets; then
  step "bursts at step budgets (tokens / images a step)"
  burst_header > "$W/budget.md"
  for pair in ${BUDGETS:-2048/8 8192/8 4096/8 16384/8 8192/16 2048/8}; do
    for dir in /tmp/pages64 /tmp/pages; do budget_burst $dir $pair 120 | tee -a "$W/budget.md"; done
  done
fi

if section warmup; then
  step "first requests after loading, with and without the warm-up pages at load"
  echo "| warm-up at load | load log | first page ms (vision / prefill / first token / total) | first 64 pages at once, pages/s |" > "$W/warmup.md"
  echo "|---|---|---|---|" >> "$W/warmup.md"
  for round in 1 2; do
    for flag in "" --no-load-warmup; do
      LECTOR_LOG=info timeout 60 $CLI bench /tmp/pages/p001.ppm $H $flag --warmup 0 --repeat 1 --no-throughput \
        > "$W/first_page_${round}${flag}.txt" 2>&1
      page=$(awk '$1 ~ /^(vision|prefill|first_token|total)$/ {printf "%s ", $2}' "$W/first_page_${round}${flag}.txt")
      load=$(grep -o "warm-up of .*" "$W/first_page_${round}${flag}.txt" | head -1)
      f="$W/first_burst_${round}${flag}.json"
      timeout 60 $CLI bench /tmp/pages64 $H $flag --no-latency --warmup 0 --repeat 1 --json > "$f" 2> "${f%.json}.log"
      rate=$(python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["throughput_img_per_s"])' "$f" 2>/dev/null)
      echo "| ${flag:-on} | ${load:--} | $page | ${rate:-failed} |" | tee -a "$W/warmup.md"
    done
  done
fi
if section load; then
  step "loading: the runner's tuning measured, then kept from that start"
  export LECTOR_CACHE_DIR=/tmp/lector-cache; rm -rf "$LECTOR_CACHE_DIR"
  echo "| start | tuning | load ms | one page: vision / prefill / decode / total ms | 64 pages at once, pages/s |" > "$W/load.md"
  echo "|---|---|---|---|---|" >> "$W/load.md"
  for run in measured kept retune kept-again kept-64; do
    f="$W/load_$run.txt"
    if [ "$run" = kept-64 ]; then
      LECTOR_LOG=info timeout 60 $CLI bench /tmp/pages64 $H --no-latency --warmup 0 --repeat 1 > "$f" 2>&1
    else
      flag=; [ "$run" = retune ] && flag=--retune
      LECTOR_LOG=info timeout 60 $CLI bench /tmp/pages/p001.ppm $H $flag --warmup 1 --repeat 3 --no-throughput > "$f" 2>&1
    fi
    ls -l --time-style=+%T.%N "$LECTOR_CACHE_DIR" | tail -n +2 | cut -c1-140
    load=$(grep -o "loaded in [0-9]* ms" "$f" | grep -o "[0-9]*")
    tuning=$(grep -oE "tuning (measured in [0-9.]* ms|kept from an earlier start)" "$f" | head -1)
    page=$(awk '$1 ~ /^(vision|prefill|decode|total)$/ {printf "%s ", $2}' "$f")
    rate=$(grep -oE "[0-9.]+ images/s" "$f" | head -1)
    echo "| $run | ${tuning:--} | ${load:-failed} | ${page:--} | ${rate:--} |" | tee -a "$W/load.md"
  done
  # The choices of the two measured starts (a count of 2: both chose alike) and what the kept starts logged.
  grep -h "decode step of\|single-sequence" "$W/load_measured.txt" "$W/load_retune.txt" | cut -d'(' -f1 | sort | uniq -c
  grep -h "tuning kept" "$W/load_kept-again.txt"
fi
step "done"
