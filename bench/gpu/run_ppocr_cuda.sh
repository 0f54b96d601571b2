#!/usr/bin/env bash
# A shorter GPU-machine run than run_all.sh: builds lector-cli, then times PP-OCR on CUDA float16 over the
# SROIE dev receipts (warm pass, results scored with score.py) and checks clean exits. Same carry as run_all.sh.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/lector-out}; W=/tmp/lector-run; B=/tmp/lector-build
mkdir -p "$W" "$OUT"; cd "$ROOT"
trap 'tar czf "$OUT/results.tar.gz" -C /tmp lector-run 2>/dev/null' EXIT
SH=$ROOT/gpu-data/shared; export LECTOR_SHARED_DIR=$SH LECTOR_MODELS_DIR=$ROOT/models
P=/tmp/deps; for f in .gpu-deps/*.deb; do dpkg -x "$f" "$P"; done
export LD_LIBRARY_PATH=$P/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
python3 - "$SH" <<'PY'
import os, sys
from PIL import Image
sh = sys.argv[1]; d = sh + "/eval-dev/sroie2019-dev/images"; os.makedirs("/tmp/imgs/sroie", exist_ok=True)
for f in sorted(os.listdir(d)):
    Image.open(os.path.join(d, f)).convert("RGB").save("/tmp/imgs/sroie/" + os.path.splitext(f)[0] + ".ppm")
PY
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')" \
  -DLECTOR_GUI=OFF -DLECTOR_BUILD_TESTS=ON -DLECTOR_DEPS_PREFIX="$P" > "$W/configure.log" 2>&1 || { tail -20 "$W/configure.log"; exit 1; }
timeout 200 ninja -C "$B" -j"$(nproc)" lector-cli tst_safetensors tst_hunyuan_text > "$W/build.log" 2>&1; echo "build exit $?"
for t in tst_safetensors tst_hunyuan_text; do
  timeout 60 "$(find "$B/tests" -name $t -type f | head -1)" > "$W/$t.log" 2>&1; echo "$t exit $? | $(tail -1 "$W/$t.log")"
done
CLI=$B/app/cli/lector-cli
s=$(date +%s.%N)
timeout 150 "$CLI" bench /tmp/imgs/sroie --device cuda --warmup 1 --repeat 1 --results "$W/sroie_cuda.jsonl" > "$W/bench_cuda.txt" 2>&1
echo "bench cuda exit $? wall $(python3 -c "import time;print(round(time.time()-$s,1))") s"; cat "$W/bench_cuda.txt"
mkdir -p "$W/score/cuda"
python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l); r["image"] = "images/" + r["image"].rsplit(".", 1)[0] + ".jpg"; print(json.dumps(r, ensure_ascii=False))' \
  "$W/sroie_cuda.jsonl" > "$W/score/cuda/sroie2019-dev.jsonl"
python3 "$SH/tools/score.py" --eval "$SH/eval-dev" --subsets sroie2019-dev --pred "cuda=$W/score/cuda" --markdown 2>&1 | tail -3
"$CLI" recognize --device cuda --format jsonl /tmp/imgs/sroie/003.ppm > "$W/one.jsonl" 2>&1; echo "recognize exit $?"; cut -c1-200 "$W/one.jsonl"
