#!/usr/bin/env bash
# One GPU-machine run of the HunyuanOCR serving engine (issue 4) on the --size full random model of
# tools/hunyuan_reference.py, float16, 1024x1024 page (1058 image tokens), 256 forced new tokens:
#   - transformers in the same run: generate() at batch 1 and 32, and the compiled static-cache decode step
#     (run while we build, before any timing of ours, on 4 cores of their own);
#   - kernel tests; fused-runner parity (float16 / bfloat16 against transformers float32) and the decode
#     step alone at batch 1 .. 256 with and without CUDA graphs (bench_hunyuan --runner fused), and again
#     with the per-projection choices only (LECTOR_CHAIN_TUNING=0: no decode-step timing of the routes);
#     the ops of a decode step at batch 1 and 32 and of the page's prefill, each alone (runner_fp16.md);
#   - paged decode attention alone, batch 64, context 4096 (bench_paged_attention), and as the decode
#     graphs launch it at 1 to 32 sequences (bench_decode_attention, checked against the CPU reference);
#   - the decode step of 1 to 64 sequences, each part left out in turn, and from 4 sequences the
#     projections through cuBLAS (as the runner) against our tensor-core engine, each projection in turn
#     (bench_decode_step: what each part costs in the chain);
#   - the prefill of a page: the tensor-core prefill attention as shipped and as it was up to call 98
#     (prefill_attention_previous.cuh), against the CPU reference and alone at 1 to 8 prompts and in steps
#     of prompts beside decodes (also as the runner splits them); each op of a layer alone and the 24
#     layers in one graph (bench_prefill);
#   - the persistent batch-1 decode step alone: checked against the CPU reference, timed, taken apart
#     (bench_persistent_decode);
#   - the greedy screen alone at the LM head's shape, checked, then timed against the LM head + sampler
#     (bench_greedy_screen, full runs; run_hp_experiments.sh runs it too); one request with it off
#     (LECTOR_GREEDY_SCREEN=0) and the page's text both ways;
#   - the decode projections at 1..64 rows: the skinny GEMM's SIMT, tensor-core and warp-group engines against cuBLAS
#     (bench_skinny_gemm, which checks every engine against the CPU reference first);
#   - lector-cli bench: one request alone (median of 10; again with the vision tower's attention through
#     libtorch's SDPA, LECTOR_VISION_ATTENTION=sdpa, and 64 pages that way too), 64 and 256 distinct pages at once, a Poisson stream at
#     70 % of the 64-page throughput with 64 to 1024 new tokens; 16 pages through a KV pool of 8192
#     tokens (every request must finish through preemption); the first page after loading (a fresh
#     process); in full runs also 256 pages at the step budgets of 2048 and 8192 tokens and 8 and 16
#     images a step, in turn, twice.
# Same carry as run_all.sh. Everything lands in $OUT/results.tar.gz. NO_SKINNY=1 skips bench_skinny_gemm;
# QUICK=1 skips the bfloat16 runner,
# the runs without PDL, 256 pages, the tiny KV pool and the Poisson stream. TABLES_ONLY=1 keeps the build,
# kernel tests, float16 parity and issue 4's engine tables (one request, the first page after loading,
# 64 and 256 pages, tiny pool, Poisson) and skips the rest: bfloat16, the per-projection routes, table 3,
# the SDPA / no-PDL / persistent variants, the graph-sampler comparison, the 256-token launch comparisons
# (one decode step a replay against launches of 8), the step budgets' comparison and
# the diagnostic benches, bench_greedy_screen among them (a run of the engine's figures well inside one call: ~450 s).
# ROPE_COMPARISON=0 and SCREEN_CHECKS=0 leave out the rotation's placement comparison and the greedy screen's
# checks (~80 and ~40 s) where a call's device time is short.
# STOP_AFTER_SCREEN=1 stops after one request and the greedy screen's checks (below); KTESTS="..." runs only
# those kernel tests (a short check: KTESTS=tst_greedy_screen BASELINE_S=1 STOP_AFTER_SCREEN=1 TABLES_ONLY=1).
# full_run: true unless TABLES_ONLY=1 (guards each section that leaves out).
full_run() { [ -z "${TABLES_ONLY:-}" ]; }
screen_checks() { [ "${SCREEN_CHECKS:-1}" != 0 ]; }  # SCREEN_CHECKS=0 leaves the greedy screen's checks out
source "$(dirname "$0")/lib.sh"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nvcc --version | tail -2;
  python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)';
  which nsys ncu; } > "$W/machine.txt" 2>&1

step "references in the background: golden (float32), then transformers baselines (float16)"
# The references get the last 4 cores to themselves, the build and kernel tests the rest: generate() at
# batch 1 is bound by its host-side launches, and sharing cores with the build slowed it by half in run 10.
NCPU=$(nproc); REFCPUS=$(( NCPU - 4 ))-$(( NCPU - 1 )); BUILDCPUS=0-$(( NCPU - 5 ))
mkdir -p /tmp/pages
( taskset -pc "$REFCPUS" $BASHPID > /dev/null
  make_page /tmp/page_1024.png /tmp/pages/p000.ppm
  timeout 150 python3 "$SH/tools/hunyuan_reference.py" --size full --out /tmp/hy --images /tmp/page_1024.png \
    --device cuda --dtype float32 --gen 32 > "$W/reference.log" 2>&1; echo "golden exit $?" >> "$W/reference.log"
  make_tokenizer /tmp/hy/model
  # The compiled step first, in a run of its own: it is the decode-step targets' denominator, and in one run
  # behind generate() a slow host left it no time (call 217: generate() at 120 ms a step, the batch-32
  # compiled step cut by BASELINE_S=240). COMPILED_S bounds it (default: BASELINE_S, else 360).
  timeout ${COMPILED_S:-${BASELINE_S:-360}} python3 "$SH/tools/hunyuan_reference.py" --size full --out /tmp/hyb \
    --images /tmp/page_1024.png --device cuda --dtype float16 --no-golden --bench-compiled --bench-batches 1 32 \
    > "$W/baseline.log" 2>&1; echo "compiled baseline exit $?" >> "$W/baseline.log"
  timeout ${BASELINE_S:-360} python3 "$SH/tools/hunyuan_reference.py" --size full --out /tmp/hyb --images /tmp/page_1024.png \
    --device cuda --dtype float16 --no-golden --bench --bench-batches 1 32 --bench-attn sdpa --bench-repeats 1 \
    >> "$W/baseline.log" 2>&1; echo "generate() baseline exit $?" >> "$W/baseline.log" ) &
REF=$!

step "configure + build"
configure_lector -DCMAKE_CUDA_ARCHITECTURES=90 -DLECTOR_CUDA=ON -DLECTOR_BUILD_TESTS=ON || exit 1
KTESTS=${KTESTS:-"tst_kv_cache_write tst_paged_decode_attention tst_paged_prefill_attention tst_rms_norm tst_qk_norm_rope tst_silu_and_mul tst_sample_tokens tst_greedy_screen tst_skinny_gemm tst_persistent_decode tst_vision_attention tst_patchify tst_device"}
TARGETS="lector-cli bench_hunyuan tst_model_runner tst_hunyuan_vision $KTESTS"
[ -n "${STOP_AFTER_SCREEN:-}" ] || TARGETS="$TARGETS bench_paged_attention bench_persistent_decode bench_greedy_screen bench_skinny_gemm bench_decode_attention bench_decode_step bench_prefill"
# shellcheck disable=SC2086
timeout 450 taskset -c "$BUILDCPUS" ninja -C "$B" -k 0 -j"$(( NCPU - 4 ))" $TARGETS > "$W/build.log" 2>&1
echo "build exit $?"; grep -E "error:" "$W/build.log" | sort | uniq | head -20
CLI=$B/app/cli/lector-cli

step "kernel tests + runner test (CPU references)"
for t in $KTESTS tst_model_runner tst_hunyuan_vision; do
  exe=$(find "$B/tests" -name "$t" -type f -perm -u+x | head -1)
  [ -n "$exe" ] || { echo "$t: NOT BUILT"; continue; }
  # tst_persistent_decode steps its CPU reference many times, at contexts up to 4100 keys: more time.
  limit=60; [ "$t" != tst_persistent_decode ] || limit=120
  OMP_NUM_THREADS=4 timeout $limit taskset -c "$BUILDCPUS" "$exe" > "$W/$t.log" 2>&1; echo "exit $?" >> "$W/$t.log"
  printf '%-30s %s | %s\n' "$t" "$(grep -E '^[0-9]+ passed' "$W/$t.log" | tail -1)" "$(tail -1 "$W/$t.log")"
  grep -E "^FAIL" -A3 "$W/$t.log" | head -8
done

step "wait for the references"
wait $REF; tail -2 "$W/reference.log"; cat "$W/baseline.log" | grep -E "^\{|exit|Error|error" | tail -8
# 256 different pages (p000 is the page above), and the first 64 of them: the bursts and the Poisson
# stream submit distinct images, as users do, not one image many times.
make_pages /tmp/pages 256 > /dev/null; mkdir -p /tmp/pages64
for i in $(seq 0 63); do ln -sf "$(printf '/tmp/pages/p%03d.ppm' "$i")" /tmp/pages64/; done
G=/tmp/hy/golden_page_1024.safetensors

step "fused runner: parity (float16, bfloat16) and the decode step alone"
timeout 150 "$B/tests/model/bench_hunyuan" --model /tmp/hy/model --image /tmp/pages/p000.ppm --golden $G --device cuda \
  --dtype float16 --gen 32 --repeats 0 --runner fused --decode-batches 1,2,4,8,16,24,32,64,128,256 > "$W/runner_fp16.md" 2>&1
echo "fp16 exit $?"; grep -v "^$" "$W/runner_fp16.md" | grep -A100 "fused runner" 
# (the sections a TABLES_ONLY or QUICK run leaves out say nothing, rather than "exit 1")
if [ -z "${QUICK:-}" ] && full_run; then
  timeout 60 "$B/tests/model/bench_hunyuan" --model /tmp/hy/model --image /tmp/pages/p000.ppm --golden $G --device cuda \
    --dtype bfloat16 --gen 32 --repeats 0 --runner fused --decode-batches 1 > "$W/runner_bf16.md" 2>&1
  echo "bf16 exit $?"; grep -E "rel. L2|greedy" "$W/runner_bf16.md" 2>/dev/null
fi

if full_run; then
  step "the decode step again with the per-projection choices only (LECTOR_CHAIN_TUNING=0)"
  LECTOR_CHAIN_TUNING=0 timeout 90 "$B/tests/model/bench_hunyuan" --model /tmp/hy/model --image /tmp/pages/p000.ppm --device cuda \
    --dtype float16 --gen 8 --repeats 0 --runner fused --decode-batches 4,8,16,24,32,64 > "$W/runner_nochain.md" 2>&1
  echo "no chain tuning exit $?"
fi
grep -E "^\| batch|decode step (of|routes)" "$W/runner_nochain.md" "$W/runner_fp16.md" 2>/dev/null | head -40
# The graphs' rotation and K/V write inside the attention kernel (the default for graphs of up to 48
# sequences since call 206) against the QK-norm/RoPE kernel before it (LECTOR_FUSED_DECODE_ROPE=0) and inside
# attention at every size (=1), in every run: the decode steps of 4 to 64 sequences (ROPE_COMPARISON=0 skips it).
[ "${ROPE_COMPARISON:-1}" = 0 ] || for v in 0 1; do
  step "the decode step with LECTOR_FUSED_DECODE_ROPE=$v"
  LECTOR_FUSED_DECODE_ROPE=$v timeout 90 "$B/tests/model/bench_hunyuan" --model /tmp/hy/model --image /tmp/pages/p000.ppm \
    --device cuda --dtype float16 --gen 8 --repeats 0 --runner fused --decode-batches 4,8,16,32,48,64 > "$W/runner_rope_$v.md" 2>&1
  echo "rope $v exit $?"; grep -E "^\| batch|decode step of" "$W/runner_rope_$v.md" 2>/dev/null | head -24
done

if full_run; then
  step "paged decode attention alone (table 3)"
  timeout 120 "$B/bench_paged_attention" "$W/attention.md" > "$W/attention.log" 2>&1; echo "attention exit $?"
  grep -E "^\|" "$W/attention.md" 2>/dev/null | head -20
fi

# The benches that take the step and its kernels apart: after the engine's tables, so that a run near the
# device's 600 s a call loses these rather than the targets (call 126: the full run reached 585 s before
# the 64-page burst when they ran first).
diagnostics() {
  step "decode attention as the graphs launch it (batch 1 to 32, contexts 1076 and 1332)"
  for c in 1076 1332; do
    timeout 60 "$B/gpu/bench_decode_attention" --context $c > "$W/decode_attention_$c.md" 2>&1; echo "decode attention $c exit $?"
    grep -E "MISMATCH|all checks|graphs' choice" "$W/decode_attention_$c.md" | grep -v " ok " | head -8
  done
  # The graphs of 24 and 40 sequences (whole row partitions in one wave of CTAs, and both neighbours), and
  # of 2, 4 and 16 (the cluster merge, 64-key and row partitions, the neighbours).
  timeout 60 "$B/gpu/bench_decode_attention" --context 1076 --batches 2,4,16,24,40 > "$W/decode_attention_more.md" 2>&1
  echo "decode attention 2, 4, 16, 24, 40 exit $?"; grep -E "MISMATCH|all checks|^\| [0-9]+ \| .* %" "$W/decode_attention_more.md" | head -40

  step "the decode step of 1 to 64 sequences taken apart (each part left out in turn; cuBLAS against our tensor cores)"
  timeout 150 "$B/gpu/bench_decode_step" --batches 1,2,4,8,16,32,64 > "$W/decode_step.md" 2>&1; echo "decode step exit $?"
  grep -E "^## |^\| (as the|without attention|attention in|tensor cores)|NOT FINITE|failed" "$W/decode_step.md" | head -100

  step "the prefill of a page taken apart (attention against the CPU reference, each op alone, the 24 layers)"
  timeout 180 "$B/gpu/bench_prefill" > "$W/prefill.md" 2>&1; echo "prefill exit $?"
  grep -E "MISMATCH|all checks|CHECK|^\| (one prompt|[248] prompts|chunk|a prompt|63 decodes|32 decodes|prefill attention|sum|\*\*the 24)" "$W/prefill.md" | head -50

  step "the greedy screen alone at the LM head's shape: checks, then against the LM head + sampler (bench_greedy_screen)"
  # (also in run_hp_experiments.sh, whose short call runs it from a binary built here)
  timeout 90 "$B/gpu/bench_greedy_screen" > "$W/greedy_screen.md" 2>&1; echo "greedy screen exit $?"
  grep -v "^$" "$W/greedy_screen.md" | head -20

  step "the persistent decode step alone (check against the CPU reference, time, parts)"
  timeout 120 "$B/gpu/bench_persistent_decode" > "$W/persistent.md" 2>&1; echo "persistent exit $?"
  grep -E "FAILED|as shipped|LM head alone \(|no copies, no waits|stream alone|layer:" "$W/persistent.md" | head -12

  step "decode projections at 1..64 rows: skinny GEMM engines against cuBLAS"
  # NO_SKINNY=1 skips it (a run whose skinny GEMM kernels did not change; it takes ~40 s).
  [ -n "${NO_SKINNY:-}" ] || timeout 120 "$B/gpu/bench_skinny_gemm" > "$W/skinny.md" 2>&1; echo "skinny exit $?"
  grep -E "MISMATCH|all checks|^\| (o|lm head|down)" "$W/skinny.md" 2>/dev/null | head -24
}

H="--model hunyuan-ocr --model-dir /tmp/hy/model --device cuda --preset spotting --max-new-tokens 256 --ignore-eos"
# request_with LABEL VAR=VALUE...: one request (median of 5) with those variables set, its vision, prefill,
# decode, per-token and total lines labelled into latency.txt.
request_with() {
  local label=$1; shift
  env "$@" timeout 60 $CLI bench /tmp/pages/p000.ppm $H --warmup 1 --repeat 5 --no-throughput 2>&1 \
    | grep -E "^(vision|prefill|decode|per_token|total)" | sed "s/^/$label: /" | tee -a "$W/latency.txt"
}
step "one request alone (median of 10)"
timeout 90 $CLI bench /tmp/pages/p000.ppm $H --warmup 2 --repeat 10 --no-throughput 2>&1 | tee "$W/latency.txt"
# One decode step a graph replay (--decode-graph-steps 1) against the default launches of 8 above; then the
# text of one page both ways, forced to 256 tokens and with its stop ids and repeat guard (up to 600
# tokens: a stop inside a launch drops the steps after it): the same kernels, so the same text. Full runs
# only since call 187 checked them (~60 s; the 1000-token check below stays in every run).
full_run && timeout 60 $CLI bench /tmp/pages/p000.ppm $H --decode-graph-steps 1 --warmup 1 --repeat 10 --no-throughput 2>&1 \
  | grep -E "^(decode|per_token|total)" | sed 's/^/one decode step a replay: /' | tee -a "$W/latency.txt"
full_run && for n in 1 8; do
  timeout 60 $CLI recognize /tmp/pages/p000.ppm $H --decode-graph-steps $n --format jsonl > "$W/steps_forced_$n.jsonl" 2>&1
  timeout 60 $CLI recognize /tmp/pages/p000.ppm ${H/--max-new-tokens 256 --ignore-eos/--max-new-tokens 600} --decode-graph-steps $n \
    --format jsonl > "$W/steps_stops_$n.jsonl" 2>&1
done
full_run && for kind in forced stops; do
  same_page "decode graph steps 1 vs 8 ($kind)" "$W/steps_${kind}_1.jsonl" "$W/steps_${kind}_8.jsonl"
done | tee -a "$W/latency.txt"
# The greedy screen (an exact argmax screened through an 8-bit copy of the LM head, in place of the head and
# the sampler: docs/serving.md) off against the default above (bench_hunyuan printed the default's verdict
# at load), the verdict when forced on, and the page's text both ways, forced and with stops: the same
# argmax, so the same text.
screen_checks && request_with "greedy screen off" LECTOR_GREEDY_SCREEN=0
# The head-parallel step's layer 0 launched after the work before it (LECTOR_HP_FIRST_PDL=0, as until the
# thirty-fourth session) against the default above, where it starts under PDL and reads the step's inputs
# after its wait (the 1000-token check below compares launches of 8, which move those inputs on in place,
# with one step a replay).
full_run && request_with "layer 0 without PDL" LECTOR_HP_FIRST_PDL=0
# The head-parallel step's attention clusters by the default placement (LECTOR_HP_CLUSTER_POLICY=0, as until
# call 190) against the load-balancing policy, shipped since (6-12 us a step faster in bench_persistent_decode).
# Both settled in calls 191-196: full runs only since.
full_run && request_with "attention clusters by the default placement" LECTOR_HP_CLUSTER_POLICY=0
if screen_checks; then
  for s in 0 1; do
    LECTOR_LOG=info LECTOR_GREEDY_SCREEN=$s timeout 60 $CLI recognize /tmp/pages/p000.ppm $H --format jsonl > "$W/screen_forced_$s.jsonl" 2>"$W/screen_forced_$s.log"
    LECTOR_GREEDY_SCREEN=$s timeout 60 $CLI recognize /tmp/pages/p000.ppm ${H/--max-new-tokens 256 --ignore-eos/--max-new-tokens 600} \
      --format jsonl > "$W/screen_stops_$s.jsonl" 2>&1
  done
  grep -m1 "greedy screen" "$W/screen_forced_1.log" | sed 's/^/load, LECTOR_GREEDY_SCREEN=1: /' | tee -a "$W/latency.txt"
  for kind in forced stops; do
    same_page "greedy screen off vs on ($kind)" "$W/screen_${kind}_0.jsonl" "$W/screen_${kind}_1.jsonl"
  done | tee -a "$W/latency.txt"
fi
# STOP_AFTER_SCREEN=1: a short check of the screen in the engine (with KTESTS=tst_greedy_screen and BASELINE_S=1: the
# build, that test, parity, one request and the checks above): the default's load line, then done.
if [ -n "${STOP_AFTER_SCREEN:-}" ]; then
  LECTOR_LOG=info timeout 60 $CLI recognize /tmp/pages/p000.ppm $H --format jsonl 2>&1 >/dev/null | grep -m1 "greedy screen" \
    | sed 's/^/load, default: /' | tee -a "$W/latency.txt"
  step "done (STOP_AFTER_SCREEN)"; exit 0
fi
# The vision tower's attention through libtorch's SDPA (our kernel is the default on Hopper), against the run above.
full_run && LECTOR_VISION_ATTENTION=sdpa timeout 60 $CLI bench /tmp/pages/p000.ppm $H --warmup 1 --repeat 5 --no-throughput 2>&1 \
  | grep -E "^(vision|total)" | sed 's/^/vision attention by SDPA: /' | tee -a "$W/latency.txt"
[ -n "${QUICK:-}" ] || ! full_run || request_with "without PDL" LECTOR_PDL=0
full_run && for mode in on off; do
  LECTOR_LOG=info timeout 60 $CLI bench /tmp/pages/p000.ppm $H --persistent-decode $mode --warmup 1 --repeat 5 --no-throughput 2>&1 \
    | grep -E "^(decode|per_token|total)|persistent|kernel chain" | sed "s/^/--persistent-decode $mode: /" | tee -a "$W/latency.txt"
done
full_run && step "tokens drawn inside the decode graphs equal those drawn after them (LECTOR_GRAPH_SAMPLER=0)"
# Greedy with the default penalty over one page (batch 1 both ways: the same kernels, so the same text)
# and over 3 pages at once (batches of 1, 2 and 3 sequences, the last in the 4-row graph with one padding
# row); top-k sampling at temperature 0.8 over one page (the same split of the draw over CTAs both
# ways, so the same draws). Each pair of runs must print the same results.
P3="/tmp/pages/p000.ppm /tmp/pages/p001.ppm /tmp/pages/p002.ppm"
full_run && for mode in greedy greedy3 sampled; do
  pages=/tmp/pages/p000.ppm; extra=""
  [ $mode = greedy3 ] && pages=$P3
  [ $mode = sampled ] && extra="--temperature 0.8 --top-k 20"
  for g in 1 0; do
    LECTOR_GRAPH_SAMPLER=$g timeout 60 $CLI recognize $pages $H $extra --format jsonl > "$W/graph_sampler_${mode}_$g.jsonl" 2>"$W/graph_sampler_${mode}_$g.log"
  done
  python3 - "$W" $mode <<'PY'
import json, os, sys
w, mode = sys.argv[1], sys.argv[2]
def pages(g):  # every field but the timings
    rows = [json.loads(l) for l in open("%s/graph_sampler_%s_%s.jsonl" % (w, mode, g)) if l.strip()]
    return [{k: v for k, v in r.items() if k != "timing_ms"} for r in rows]
a, b = pages("1"), pages("0")
ok = len(a) > 0 and not any(r.get("error") for r in a)
# Which of greedy3's pages meets which batch sizes (graphs of 1, 2, 4) depends on timing, and a batch's
# kernels round differently, so at a near-tie of the random model a page's text can part between the
# runs (calls 68 and 89, when the three were one image: at token 137 or 143). So there both runs must
# give the same texts in any order, and a difference is printed with the characters where the texts
# part; a wrong draw in the graph would part them at once.
key = lambda r: json.dumps({k: v for k, v in r.items() if k != "image"}, sort_keys=True)
verdict = ("same results" if a == b else "same results, in another order among the identical pages"
           if sorted(map(key, a)) == sorted(map(key, b)) else "DIFFERENT") if ok else "FAILED"
if verdict == "DIFFERENT":
    parts = ["%s from character %d of %d" % (os.path.basename(x["image"]), len(os.path.commonprefix([x.get("text") or "", y.get("text") or ""])),
             len(x.get("text") or "")) for x, y in zip(a, b) if x != y]
    verdict += " (" + "; ".join(parts) + ")"
print("graph sampler (%s): %d / %d pages, %s; first text %r" % (mode, len(a), len(b), verdict,
      (a[0].get("text") or "")[:60] if a else None))
PY
done | tee "$W/graph_sampler.txt"
step "one request with 1000 new tokens (contexts to 2076): the engine's choice, head-parallel throughout, the chain throughout"
L="--model hunyuan-ocr --model-dir /tmp/hy/model --device cuda --preset spotting --max-new-tokens 1000 --ignore-eos"
for mode in auto hp-only off; do
  env=""; flag="--persistent-decode auto"
  [ "$mode" = hp-only ] && env="LECTOR_LONG_CONTEXT_GRAPH=0"
  [ "$mode" = off ] && flag="--persistent-decode off"
  env $env timeout 60 $CLI bench /tmp/pages/p000.ppm $L $flag --warmup 1 --repeat 3 --no-throughput 2>&1 \
    | grep -E "^(decode|per_token|total)" | sed "s/^/1000 tokens, $mode: /" | tee -a "$W/latency.txt"
done
# One step a replay against the launches of 8 (past context 1344 the chain's graph of 8 steps), and the
# text of the page both ways.
timeout 60 $CLI bench /tmp/pages/p000.ppm $L --decode-graph-steps 1 --warmup 1 --repeat 3 --no-throughput 2>&1 \
  | grep -E "^(decode|per_token|total)" | sed "s/^/1000 tokens, one step a replay: /" | tee -a "$W/latency.txt"
for n in 1 8; do
  timeout 60 $CLI recognize /tmp/pages/p000.ppm $L --decode-graph-steps $n --format jsonl > "$W/steps_long_$n.jsonl" 2>&1
done
same_page "decode graph steps 1 vs 8 (1000 tokens)" "$W/steps_long_1.jsonl" "$W/steps_long_8.jsonl" | tee -a "$W/latency.txt"
step "64 and 256 pages at once"
# burst_with NAME PAGES LIMIT [ARG...]: the folder's pages submitted at once, the bench's JSON in $W/NAME.json
# and its stderr (log lines, libtorch's warnings, errors) in $W/NAME.log; VAR=VALUE arguments go to the
# environment, the others to lector-cli.
burst_with() {
  local name=$1 pages=$2 limit=$3 vars=() flags=(); shift 3
  for a in "$@"; do if [[ $a =~ ^[A-Z_0-9]+= ]]; then vars+=("$a"); else flags+=("$a"); fi; done
  env "${vars[@]}" timeout "$limit" $CLI bench "$pages" $H "${flags[@]}" --no-latency --warmup 0 --repeat 1 --json \
    > "$W/$name.json" 2> "$W/$name.log"
}
burst_with thr64 /tmp/pages64 90
[ -n "${QUICK:-}" ] || burst_with thr256 /tmp/pages 150
full_run && burst_with thr64_sdpa /tmp/pages64 90 LECTOR_VISION_ATTENTION=sdpa
python3 - "$W" <<'PY'
import json, os, sys
for n in ("thr64", "thr256", "thr64_sdpa"):
    path = "%s/%s" % (sys.argv[1], n)
    if not os.path.exists(path + ".json"):
        continue
    try:
        j = json.load(open(path + ".json"))
        print(n, {k: v for k, v in j.items() if k not in ("stages_ms",)})
    except Exception as e:
        print(n, "unreadable:", e, open(path + ".json").read()[-300:], open(path + ".log").read()[-600:])
PY
# The step budgets against each other in this run (call 171 moved the default from 2048 to 8192 tokens a
# step on one sample each): the old default and the new one in turn, twice, and 16 images a step. Full
# runs only (~110 s; calls 172 and 176 ran it in TABLES_ONLY, which then took 556 s of the call's 600);
# run_burst_options.sh's budgets section is the wider sweep.
[ -n "${QUICK:-}" ] || ! full_run || {
  step "256 pages at once: step budgets in turn (tokens / images a step)"
  burst_header > "$W/budget.md"
  for pair in 2048/8 8192/8 8192/16 2048/8 8192/8 8192/16; do budget_burst /tmp/pages $pair 60 | tee -a "$W/budget.md"; done
  # What the first burst after loading pays for first sights (allocator growth, new product shapes): the
  # 64 pages again right after an unmeasured burst of them, at the default budgets.
  timeout 60 $CLI bench /tmp/pages64 $H --no-latency --warmup 0 --warmup-burst --repeat 1 --json > "$W/thr64_warm.json" \
    2> "$W/thr64_warm.log"
  burst_row "$W/thr64_warm.json" "8192 (warm)" 8 64 | tee -a "$W/budget.md"; }
# The first page after loading, one request in a fresh process (the table's one-request figure is warm;
# with the warm-up pages at load the two have matched since call 176).
[ -n "${QUICK:-}" ] || {
  step "the first page after loading"
  timeout 60 $CLI bench /tmp/pages/p001.ppm $H --warmup 0 --repeat 1 --no-throughput > "$W/first_page.txt" 2>&1
  echo "first page after loading:"; grep -E "^(preprocess|vision|prefill|first_token|decode|total) " "$W/first_page.txt"; }
[ -n "${QUICK:-}" ] && { diagnostics; step "done (QUICK: no tiny pool, no Poisson stream)"; exit 0; }
step "a KV pool far too small: 16 pages with 8192 cache tokens (preemption by recompute on the GPU path)"
timeout 90 $CLI bench /tmp/pages/p000.ppm $H --no-latency --warmup 0 --repeat 1 --copies 16 --kv-cache-tokens 8192 --json \
  > "$W/tinypool.json" 2> "$W/tinypool.log"
python3 -c "import json;j=json.load(open('$W/tinypool.json'));t=j['throughput'];print('tiny pool:', t['finished'], 'of', t['requests'], 'finished,', t['failures'], 'failed,', t['preemptions'], 'preemptions, peak', t['kv_blocks']['peak'], 'of', t['kv_blocks']['total'], 'blocks')" \
  || tail -5 "$W/tinypool.json" "$W/tinypool.log"
RATE=$(python3 -c "import json;print(round(0.7*json.load(open('$W/thr64.json'))['throughput_img_per_s'],2))" 2>/dev/null || echo 10)
step "Poisson stream at $RATE req/s, 64..1024 new tokens"
# 64 distinct pages cycled; one warm-up pass over them, no burst (over 256 pages, with their warm-up one
# page at a time and their burst, this step took 71 s in call 169 against 19 in call 158).
timeout 150 $CLI bench /tmp/pages64 $H --no-latency --no-throughput --poisson "$RATE" --count 200 --new-tokens-range 64:1024 2>&1 | tee "$W/poisson.txt"
full_run && diagnostics
step "done"
