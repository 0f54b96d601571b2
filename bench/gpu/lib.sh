# Shared set-up of the GPU-machine run scripts (run_all.sh, run_ppocr_cuda.sh, run_serving.sh,
# run_vision.sh); source it from the repository's bench/gpu/. Sets ROOT, OUT, W (work folder, packed into
# $OUT/results.tar.gz at exit), B (build folder), SH (the carried copy of ../shared: gpu-data/shared, see
# prepare_carry.sh) and P (the unpacked Debian packages of .gpu-deps), defines step (timed section
# headers), exports the fixture / model folders and the library path.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-/tmp/lector-out}
W=/tmp/lector-run
B=/tmp/lector-build
mkdir -p "$W" "$OUT"
cd "$ROOT"
trap 'tar czf "$OUT/results.tar.gz" -C /tmp lector-run 2>/dev/null' EXIT
# step WHAT...: a section header with the seconds since the script started, also into $W/steps.log.
T0=$(date +%s)
step() { echo "== $* (+$(( $(date +%s) - T0 )) s)" | tee -a "$W/steps.log"; }
SH=$ROOT/gpu-data/shared
export LECTOR_SHARED_DIR=$SH LECTOR_MODELS_DIR=$ROOT/models
P=/tmp/deps
for f in .gpu-deps/*.deb; do dpkg -x "$f" "$P"; done
export LD_LIBRARY_PATH=$P/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}

# configure_lector [CMAKE_ARGS...]: configures $B without the GUI against the installed PyTorch's libtorch
# and the packages in $P; prints the end of the log and fails when CMake fails.
configure_lector() {
  cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')" \
    -DLECTOR_GUI=OFF -DLECTOR_DEPS_PREFIX="$P" "$@" > "$W/configure.log" 2>&1 || { tail -30 "$W/configure.log"; return 1; }
}

# same_page LABEL A.jsonl B.jsonl: whether two `recognize --format jsonl` runs of one page gave the same text
# and token count ("LABEL: same text; tokens a / b", or DIFFERENT).
same_page() {
  python3 - "$@" <<'PY'
import json, sys
label, files = sys.argv[1], sys.argv[2:]
def page(f):
    try:
        rows = [json.loads(l) for l in open(f) if l.strip().startswith("{")]
    except OSError:
        rows = []
    return rows[0] if rows else {}
a, b = page(files[0]), page(files[1])
same = a.get("text") is not None and a.get("text") == b.get("text") and a.get("tokens") == b.get("tokens")
print("%s: %s; tokens %s / %s" % (label, "same text" if same else "DIFFERENT", a.get("tokens"), b.get("tokens")))
PY
}

# make_page FILE...: a text-dense 1024x1024 page (four copies of doc_en's text stacked), saved to each
# FILE (the format from its extension: .png, .ppm ...).
make_page() {
  python3 - "$SH" "$@" <<'PY'
import sys
from PIL import Image
doc = Image.open(sys.argv[1] + "/fixtures/hunyuan/doc_en.png").convert("RGB")
page = Image.new("RGB", (1024, 1024), "white")
for k in range(4):
    page.paste(doc.crop((0, 0, 800, 250)), (100, 20 + k * 250))
for path in sys.argv[2:]:
    page.save(path)
PY
}

# make_pages DIR N: N different pages of make_page's kind and size as DIR/pNNN.ppm (p000 is make_page's
# page; page k moves each text block by its own offsets and prints its number), so a burst of pages is
# N distinct images, not one image N times (a cache keyed by the image would make copies free).
make_pages() {
  python3 - "$SH" "$1" "$2" <<'PY'
import os, sys
from PIL import Image, ImageDraw
doc = Image.open(sys.argv[1] + "/fixtures/hunyuan/doc_en.png").convert("RGB")
out, n = sys.argv[2], int(sys.argv[3])
os.makedirs(out, exist_ok=True)
for i in range(n):
    page = Image.new("RGB", (1024, 1024), "white")
    for k in range(4):
        dx, dy = (i * (37 + 11 * k)) % 180, (i * (13 + 5 * k)) % 5
        page.paste(doc.crop((0, 0, 800, 250)), (100 - 80 * (i > 0) + dx, 20 + k * 250 + dy))
    if i:
        ImageDraw.Draw(page).text((960, 1000), "%d" % i, fill="black")
    page.save(os.path.join(out, "p%03d.ppm" % i))
print("pages", n)
PY
}

# sroie_ppm DIR: the 20 SROIE dev receipts as DIR/NNN.ppm (the GPU build has no OpenCV imgcodecs).
sroie_ppm() {
  python3 - "$SH" "$1" <<'PY'
import os, sys
from PIL import Image
src, dst = sys.argv[1] + "/eval-dev/sroie2019-dev/images", sys.argv[2]
os.makedirs(dst, exist_ok=True)
for f in sorted(os.listdir(src)):
    Image.open(os.path.join(src, f)).convert("RGB").save(os.path.join(dst, os.path.splitext(f)[0] + ".ppm"))
print("ok", len(os.listdir(dst)))
PY
}

# score_sroie PEER=RESULTS.jsonl...: scores `lector-cli bench --results` files of the PPM receipts with
# score.py (image names mapped back to images/NNN.jpg) and prints the table's rows.
score_sroie() {
  local preds=() peer file
  for arg in "$@"; do
    peer=${arg%%=*}; file=${arg#*=}
    mkdir -p "$W/score/$peer"
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l); r["image"] = "images/" + r["image"].rsplit(".", 1)[0] + ".jpg"; print(json.dumps(r, ensure_ascii=False))' \
      "$file" > "$W/score/$peer/sroie2019-dev.jsonl" 2>/dev/null
    preds+=(--pred "$peer=$W/score/$peer")
  done
  python3 "$SH/tools/score.py" --eval "$SH/eval-dev" --subsets sroie2019-dev "${preds[@]}" --markdown > "$W/score.md" 2>&1
  tail -$(( $# + 2 )) "$W/score.md"
}

# make_tokenizer DIR: a made-up tokenizer.json for the random model in DIR (tools/hunyuan_reference.py
# writes none): the spotting prompt's 13 real ids as added tokens, every other id "t<id>", like
# tests/support/tiny_hunyuan.h, so lector-cli builds the real prompt ids.
make_tokenizer() {
  python3 - "$1" <<'PY'
import json, sys
pieces = [("检测", 5055), ("并", 951), ("识别", 9977), ("图片", 12858), ("中的", 1843), ("文字", 9738), ("，", 270),
          ("将", 934), ("文本", 8433), ("坐标", 4699), ("格式化", 68216), ("输出", 8287), ("。", 292)]
res = {i for _, i in pieces}
vocab = {"t%d" % i: i for i in range(120000) if i not in res}
added = [dict(id=i, content=t, single_word=False, lstrip=False, rstrip=False, normalized=False, special=False) for t, i in pieces]
added += [dict(id=i, content="<|special_%d|>" % i, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
          for i in range(120000, 120818)]
tok = {"version": "1.0", "added_tokens": added, "normalizer": None,
       "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
       "decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": vocab, "merges": []}}
json.dump(tok, open(sys.argv[1] + "/tokenizer.json", "w"), ensure_ascii=False)
PY
}

# burst_header, burst_row JSON TOKENS IMAGES PAGES: a markdown table of `lector-cli bench --json` bursts at
# the given step budgets (--max-tokens-per-step, --vision-images-per-step), one row a run. budget_burst DIR
# TOKENS/IMAGES TIMEOUT: one such burst of DIR's pages at once through $CLI with the options $H, in a fresh
# process, its JSON kept in $W and its row printed.
burst_header() {
  echo "| tokens a step | images a step | pages | pages/s | tokens/s | p50 ms | p99 ms | vision steps | prefill steps | decode-only steps |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
}
burst_row() {
  python3 - "$@" <<'PY'
import json, os, sys
f, tok, img, n = sys.argv[1:]
try:
    j = json.load(open(f))
except Exception:
    log = f[:-len(".json")] + ".log"  # the bench's stderr, beside its JSON
    tail = open(log).read()[-300:] if os.path.exists(log) else open(f).read()[-300:]
    print("| %s | %s | %s | failed: %s |" % (tok, img, n, tail.replace("\n", " "))); sys.exit()
t = j.get("throughput", {})
e = t.get("engine_steps", {})
steps = lambda k: "%s (%.0f ms)" % (e[k]["steps"], e[k]["ms"]) if k in e else "-"
print("| %s | %s | %s | %.2f | %.0f | %.0f | %.0f | %s | %s | %s |" % (tok, img, n, j.get("throughput_img_per_s", 0),
      j.get("generated_tokens_per_s", 0), t.get("e2e_ms", {}).get("p50", 0), t.get("e2e_ms", {}).get("p99", 0),
      steps("vision"), steps("prefill"), steps("decode")))
PY
}
budget_burst() {
  local tok=${2%/*} img=${2#*/} f
  f="$W/burst_${tok}_${img}_$(basename "$1")_$RANDOM.json"
  timeout "$3" $CLI bench "$1" $H --max-tokens-per-step "$tok" --vision-images-per-step "$img" --no-latency \
    --warmup 0 --repeat 1 --json > "$f" 2> "${f%.json}.log"
  burst_row "$f" "$tok" "$img" "$(ls "$1" | wc -l)"
}
