#!/usr/bin/env bash
# GPU-machine run of the HunyuanOCR continuous-batching backend on the --size full random model:
# one request alone (latency split), then 64 pages submitted at once (pages/s, generated tokens/s), 256
# forced new tokens each. The model folder gets a made-up tokenizer.json (the spotting prompt's 13 real
# ids as added tokens, every other id "t<id>"), like tests/support/tiny_hunyuan.h. Same carry as run_all.sh.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/lector-out}; W=/tmp/lector-run; B=/tmp/lector-build
mkdir -p "$W" "$OUT"; cd "$ROOT"
trap 'tar czf "$OUT/results.tar.gz" -C /tmp lector-run 2>/dev/null' EXIT
SH=$ROOT/gpu-data/shared; export LECTOR_SHARED_DIR=$SH LECTOR_MODELS_DIR=$ROOT/models
P=/tmp/deps; for f in .gpu-deps/*.deb; do dpkg -x "$f" "$P"; done
export LD_LIBRARY_PATH=$P/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
N=${PAGES:-64}
( python3 - "$SH" "$N" <<'PY'
import os, sys
from PIL import Image
sh, n = sys.argv[1], int(sys.argv[2])
doc = Image.open(sh + "/fixtures/hunyuan/doc_en.png").convert("RGB")
page = Image.new("RGB", (1024, 1024), "white")
for k in range(4):
    page.paste(doc.crop((0, 0, 800, 250)), (100, 20 + k * 250))
page.save("/tmp/page_1024.png"); os.makedirs("/tmp/pages", exist_ok=True)
for i in range(n): page.save("/tmp/pages/p%03d.ppm" % i)
PY
  timeout 120 python3 "$SH/tools/hunyuan_reference.py" --size full --out /tmp/hy --images /tmp/page_1024.png --no-golden \
    > "$W/reference.log" 2>&1
  python3 - <<'PY'
import json
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
json.dump(tok, open("/tmp/hy/model/tokenizer.json", "w"), ensure_ascii=False)
PY
  ls /tmp/hy/model | head -3 ) > "$W/model.log" 2>&1 &
MODEL=$!
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')" \
  -DLECTOR_GUI=OFF -DLECTOR_BUILD_TESTS=OFF -DLECTOR_DEPS_PREFIX="$P" > "$W/configure.log" 2>&1 || { tail -20 "$W/configure.log"; exit 1; }
timeout 150 ninja -C "$B" -j"$(nproc)" lector-cli > "$W/build.log" 2>&1; echo "build exit $?"; grep -E "error:" "$W/build.log" | head
wait $MODEL; tail -2 "$W/model.log"
CLI=$B/app/cli/lector-cli
H="--model hunyuan-ocr --model-dir /tmp/hy/model --device cuda --preset spotting --max-new-tokens 256 --ignore-eos"
timeout 60 $CLI bench /tmp/pages/p000.ppm $H --warmup 1 --repeat 2 --no-throughput 2>&1 | tee "$W/latency.txt"
timeout 100 $CLI bench /tmp/pages $H --no-latency --warmup 0 --repeat 1 2>&1 | tee "$W/throughput.txt"
