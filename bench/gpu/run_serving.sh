#!/usr/bin/env bash
# GPU-machine run of the HunyuanOCR continuous-batching backend on the --size full random model:
# one request alone (latency split), then 64 pages submitted at once (pages/s, generated tokens/s), 256
# forced new tokens each. The model folder gets a made-up tokenizer.json (the spotting prompt's 13 real
# ids as added tokens, every other id "t<id>"), like tests/support/tiny_hunyuan.h. Same carry as run_all.sh.
source "$(dirname "$0")/lib.sh"
N=${PAGES:-64}
( mkdir -p /tmp/pages && make_page /tmp/page_1024.png /tmp/pages/p000.ppm &&
  for i in $(seq 1 $((N - 1))); do cp /tmp/pages/p000.ppm "$(printf '/tmp/pages/p%03d.ppm' "$i")"; done
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
configure_lector -DLECTOR_BUILD_TESTS=OFF || exit 1
timeout 150 ninja -C "$B" -j"$(nproc)" lector-cli > "$W/build.log" 2>&1; echo "build exit $?"; grep -E "error:" "$W/build.log" | head
wait $MODEL; tail -2 "$W/model.log"
CLI=$B/app/cli/lector-cli
H="--model hunyuan-ocr --model-dir /tmp/hy/model --device cuda --preset spotting --max-new-tokens 256 --ignore-eos"
timeout 60 $CLI bench /tmp/pages/p000.ppm $H --warmup 1 --repeat 2 --no-throughput 2>&1 | tee "$W/latency.txt"
timeout 100 $CLI bench /tmp/pages $H --no-latency --warmup 0 --repeat 1 2>&1 | tee "$W/throughput.txt"
