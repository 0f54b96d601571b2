#!/usr/bin/env bash
# A short GPU-machine run (~6 min on a fresh machine, the most important first) for the fresh prompts'
# attention through cuDNN (core/runner/prefill_sdpa, RunnerOptions::prefillSdpaMinPrompts). Builds only
# lector-cli and tst_model_runner and runs the latter (cuDNN against the prefill kernel on CUDA). Then, on the
# --size full random model: the 64-page burst after an unmeasured one (cuDNN's plans paid) by default (runs of
# 2+ whole prompts through cuDNN) and with none (LECTOR_PREFILL_SDPA=0); the same without that burst; one
# request with its prompt through cuDNN (=1) and by default (our kernel). No transformers baselines or parity
# (run_serving.sh has those). Results go straight to $OUT/run file by file, so a call cut short keeps what
# finished. Same carry as run_serving.sh (gpu-data, .gpu-deps).
source "$(dirname "$0")/lib.sh"
trap - EXIT
W=$OUT/run
mkdir -p "$W"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$W/machine.txt" 2>&1

step "the model folder in the background (random weights, --size full)"
NCPU=$(nproc)
( taskset -pc $(( NCPU - 2 ))-$(( NCPU - 1 )) $BASHPID > /dev/null
  make_page /tmp/page_1024.png
  OMP_NUM_THREADS=2 timeout 200 python3 "$SH/tools/hunyuan_reference.py" --size full --out /tmp/hy --images /tmp/page_1024.png \
    --device cpu --no-golden > "$W/reference.log" 2>&1; echo "model exit $?" >> "$W/reference.log"
  make_tokenizer /tmp/hy/model
  make_pages /tmp/pages 64 > /dev/null ) &
REF=$!

step "configure + build (lector-cli, tst_model_runner)"
configure_lector -DCMAKE_CUDA_ARCHITECTURES=90 -DLECTOR_CUDA=ON -DLECTOR_BUILD_TESTS=ON || exit 1
timeout 330 taskset -c 0-$(( NCPU - 3 )) ninja -C "$B" -j"$(( NCPU - 2 ))" lector-cli tst_model_runner > "$W/build.log" 2>&1
echo "build exit $?"; grep -E "error:" "$W/build.log" | sort | uniq | head -20
CLI=$B/app/cli/lector-cli

step "tst_model_runner"
exe=$(find "$B/tests" -name tst_model_runner -type f -perm -u+x | head -1)
OMP_NUM_THREADS=4 timeout 60 "$exe" > "$W/tst_model_runner.log" 2>&1; echo "exit $?" >> "$W/tst_model_runner.log"
grep -E "fresh|longest|^[0-9]+ passed|^FAIL" -A2 "$W/tst_model_runner.log" | head -12

step "wait for the model folder"
wait $REF; tail -2 "$W/reference.log"
H="--model hunyuan-ocr --model-dir /tmp/hy/model --device cuda --preset spotting --max-new-tokens 256 --ignore-eos"
step "64 pages at once, after an unmeasured burst: default / none through cuDNN; then each without that burst"
mkdir -p /tmp/pages64; for i in $(seq 0 63); do ln -sf "$(printf '/tmp/pages/p%03d.ppm' "$i")" /tmp/pages64/; done
burst() {  # NAME VALUE [FLAGS...]: VALUE default, 0 or 1 for LECTOR_PREFILL_SDPA
  local name=$1 v=$2; shift 2
  env $([ "$v" = default ] || echo LECTOR_PREFILL_SDPA=$v) LECTOR_LOG=info timeout 90 $CLI bench /tmp/pages64 $H "$@" \
    --no-latency --warmup 0 --repeat 1 --json > "$W/$name.json" 2> "$W/$name.log"
  python3 -c "import json,sys;j=json.load(open('$W/$name.json'));print('$name:', j.get('throughput_img_per_s'), 'pages/s', j.get('engine_steps'))" \
    || tail -3 "$W/$name.log"
  grep -m3 "prefill attention" "$W/$name.log"
}
burst thr64_warm_cudnn default --warmup-burst
burst thr64_warm_kernel 0 --warmup-burst
burst thr64 default
burst thr64_kernel 0
step "one request: the prompt through cuDNN / the default (the prefill kernel for a lone prompt)"
for v in 1 default; do
  env $([ $v = default ] || echo LECTOR_PREFILL_SDPA=$v) LECTOR_LOG=info timeout 60 $CLI bench /tmp/pages/p000.ppm $H \
    --warmup 1 --repeat 5 --no-throughput > "$W/one_$v.txt" 2>&1
  echo "one request, LECTOR_PREFILL_SDPA=$v: $(grep -E '^(prefill|total) ' "$W/one_$v.txt" | tr '\n' ' ')"
  grep -m2 "prefill attention" "$W/one_$v.txt"
done
step "done"
