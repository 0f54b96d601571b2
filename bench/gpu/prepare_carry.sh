#!/usr/bin/env bash
# Copies what a GPU run needs from ../shared into gpu-data/shared, and downloads the Debian packages the
# GPU machine lacks (OpenCV core/imgproc, PCRE2, utf8proc and what they link) into .gpu-deps (all
# git-ignored; only the checkout goes to the GPU machine). Carry gpu-data, models and .gpu-deps with
# bench/gpu/run_all.sh (~62 of the carry's 64 MiB with the checkout); run_serving.sh needs gpu-data and
# .gpu-deps only.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$ROOT/.gpu-deps"
(cd "$ROOT/.gpu-deps" && apt-get download libopencv-core406 libopencv-imgproc406 libopencv-core-dev libopencv-imgproc-dev \
  libtbb12 libpcre2-dev libpcre2-8-0 libutf8proc2 libutf8proc-dev libblas3 liblapack3 libgfortran5 libglx0 libglvnd0 \
  libx11-6 libxcb1 libxau6 libxdmcp6 libbsd0 libmd0 libx11-data > /dev/null)
rm -rf "$ROOT/gpu-data/shared" && mkdir -p "$ROOT/gpu-data/shared"
cp -r "$ROOT/../shared/fixtures" "$ROOT/../shared/eval-dev" "$ROOT/../shared/tools" "$ROOT/gpu-data/shared/"
du -sh "$ROOT/gpu-data" "$ROOT/models" "$ROOT/.gpu-deps"
