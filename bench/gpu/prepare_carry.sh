#!/usr/bin/env bash
# Copies what a GPU run needs from ../shared into gpu-data/shared (git-ignored; only the checkout goes to
# the GPU machine). Carry gpu-data, models and .gpu-deps with the run: bench/gpu/run_all.sh uses them.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$ROOT/gpu-data/shared" && mkdir -p "$ROOT/gpu-data/shared"
cp -r "$ROOT/../shared/fixtures" "$ROOT/../shared/eval-dev" "$ROOT/../shared/tools" "$ROOT/gpu-data/shared/"
du -sh "$ROOT/gpu-data" "$ROOT/models" "$ROOT/.gpu-deps"
