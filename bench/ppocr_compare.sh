#!/usr/bin/env bash
# Accuracy and speed of Lector's PP-OCR pipeline against the same models on onnxruntime-node
# (@gutenye/ocr-node), on the same images in the same run, scored with ../shared/tools/score.py.
# usage: bench/ppocr_compare.sh [SUBSET_DIR]   (default ../shared/eval-dev/sroie2019-dev)
# Needs a built lector-cli (./lector.sh build). Writes bench/out/<peer>/<subset>.jsonl and prints the
# scorer's table. Environment: LECTOR_BUILD_DIR, BENCH_THREADS (default: all cores).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SUBSET_DIR="$(cd "${1:-$ROOT/../shared/eval-dev/sroie2019-dev}" && pwd)"
SUBSET="$(basename "$SUBSET_DIR")"
BUILD="${LECTOR_BUILD_DIR:-$ROOT/build}"
CLI="$BUILD/app/cli/lector-cli"
OUT="$ROOT/bench/out"
THREADS="${BENCH_THREADS:-$(nproc)}"
[ -x "$CLI" ] || { echo "build lector-cli first: ./lector.sh build" >&2; exit 1; }

if [ ! -d "$ROOT/bench/node_modules/@gutenye/ocr-node" ]; then
  # The CPU build of onnxruntime is inside the npm package; skip its GPU download step.
  (cd "$ROOT/bench" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --silent)
fi
mkdir -p "$OUT/onnxruntime" "$OUT/lector"
mapfile -t IMAGES < <(find "$SUBSET_DIR/images" -type f | sort)

echo "== onnxruntime-node (@gutenye/ocr-node), ${#IMAGES[@]} images" >&2
(cd "$ROOT/bench" && node ocr_node_baseline.mjs "$SUBSET_DIR" "${IMAGES[@]}") > "$OUT/onnxruntime/$SUBSET.jsonl"

echo "== lector-cli bench, ${#IMAGES[@]} images one at a time (latency, as the baseline), $THREADS threads" >&2
# One warm-up pass (not scored), as for the baseline; then each image is its own request with nothing
# queued before it, so timing_ms.total is the latency a user sees for one image.
"$CLI" bench "$SUBSET_DIR/images" --threads "$THREADS" --warmup 1 --repeat 1 --no-throughput \
  --results "$OUT/lector/$SUBSET.raw.jsonl" >&2
/usr/bin/python3 - "$OUT/lector/$SUBSET.raw.jsonl" "$OUT/lector/$SUBSET.jsonl" <<'PY'
import json, sys
# bench names images relative to the folder it scans; the scorer wants them relative to the subset.
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as o:
    for line in f:
        r = json.loads(line)
        r["image"] = "images/" + r["image"]
        o.write(json.dumps(r, ensure_ascii=False) + "\n")
PY

echo "== lector-cli batch (throughput: recognition batched across queued images)" >&2
t0=$(date +%s.%N)
"$CLI" batch "$SUBSET_DIR/images" --threads "$THREADS" --out "$OUT/lector/$SUBSET.batch.jsonl" --overwrite 2>/dev/null
t1=$(date +%s.%N)
/usr/bin/python3 - "$OUT/onnxruntime/$SUBSET.jsonl" "${#IMAGES[@]}" "$t0" "$t1" <<'PY'
import json, sys
base_s = sum(json.loads(l)["timing_ms"]["total"] for l in open(sys.argv[1])) / 1000
n, wall = int(sys.argv[2]), float(sys.argv[4]) - float(sys.argv[3])
print(f"throughput: lector batch {n / wall:.2f} images/s (wall {wall:.1f} s incl. model load); "
      f"onnxruntime one by one {n / base_s:.2f} images/s")
PY
/usr/bin/python3 "$ROOT/../shared/tools/score.py" --eval "$(dirname "$SUBSET_DIR")" --subsets "$SUBSET" \
  --pred "onnxruntime=$OUT/onnxruntime" --pred "lector=$OUT/lector" --markdown
