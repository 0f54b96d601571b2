#!/usr/bin/env python3
"""Probe for the vision tower's cost on the GPU machine (torch only, random weights, HunyuanOCR shapes).

1. The 27-block ViT over one 1024x1024 page (4096 patches) and over 8 pages (attention per page), with
   each scaled-dot-product-attention backend torch offers, split into its matrix products, attention
   and the rest.
2. Whether the tower can run on a second, low-priority stream while memory-bound decode steps (a CUDA
   graph standing in for one batch-64 step at a 1200-token context: 24 layers of skinny products plus
   a read of that layer's K/V) replay on a high-priority stream, and what each loses by sharing the card.

`--attention-only`: instead, attention alone per backend for one page a call and 8 pages in one batched
call, with the head dim zero-padded to 80, 96 and 128 (same result, more work: shows which head dims
the kernels are built for), in ms a page and TFLOP/s counted at head dim 72.

Prints markdown tables. Used to decide how the engine runs the vision tower beside decoding.
"""
import contextlib
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from probe_common import (C, D, DECODE_B, DECODE_CTX, DECODE_HD, DECODE_KVH, H, I, L, N, beside, decode_stand_in,
                          graph_of, median_ms, random_tower_blocks, replay, w)

blocks = random_tower_blocks()


def tower(x, pages, parts=None):
    n = x.shape[0] // pages
    for b in blocks:
        h = F.layer_norm(x, (C,), b["ln1w"], b["ln1b"], 1e-5)
        qkv = F.linear(h, b["qkv"], b["qkvb"])
        outs = []
        for p in range(pages):
            t = qkv[p * n:(p + 1) * n].view(n, 3, H, D).permute(1, 2, 0, 3)
            o = F.scaled_dot_product_attention(t[0][None], t[1][None], t[2][None])
            outs.append(o[0].permute(1, 0, 2).reshape(n, C))
        o = outs[0] if pages == 1 else torch.cat(outs)
        x = x + F.linear(o, b["o"], b["ob"])
        h = F.gelu(F.linear(F.layer_norm(x, (C,), b["ln2w"], b["ln2b"], 1e-5), b["f1"], b["f1b"]))
        x = x + F.linear(h, b["f2"], b["f2b"])
    return x


def attention_only(q, k, v, reps=L):
    for _ in range(reps):
        F.scaled_dot_product_attention(q, k, v)


def gemms_only(x):
    for b in blocks:
        F.linear(x, b["qkv"], b["qkvb"])
        F.linear(x, b["o"], b["ob"])
        h = F.linear(x, b["f1"], b["f1b"])
        F.linear(h, b["f2"], b["f2b"])


def attention_by_head_dim():
    flop = 4 * N * N * D * H * L  # a page's 27 layers, at the model's head dim
    print("| backend | head dim | pages a call | ms a page (27 layers) | TFLOP/s at head dim 72 |\n|---|---|---|---|---|")
    for pages in (1, 8):
        q, k, v = (w(pages, H, N, D) * 50 for _ in range(3))
        for name, be in backends:
            for hd in (72, 80, 96, 128):
                qp, kp, vp = (F.pad(t, (0, hd - D)) for t in (q, k, v))
                try:
                    ctx = sdpa_kernel([be]) if be is not None else contextlib.nullcontext()
                    with torch.inference_mode(), ctx:
                        ms = median_ms(lambda: [F.scaled_dot_product_attention(qp, kp, vp, scale=D ** -0.5)
                                            for _ in range(L)]) / pages
                    print(f"| {name} | {hd} | {pages} | {ms:.2f} | {flop / ms / 1e9:.0f} |", flush=True)
                except Exception as e:  # a backend that refuses this head dim or card
                    print(f"| {name} | {hd} | {pages} | refused: {str(e).splitlines()[0][:80]} | |", flush=True)


backends = [("default", None), ("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
            ("cudnn", SDPBackend.CUDNN_ATTENTION)]
if "--attention-only" in sys.argv:
    attention_by_head_dim()
    sys.exit(0)

print("## Vision tower, float16, 1024x1024 page = 4096 patches, 27 blocks\n")
print("| backend | tower, 1 page ms | tower, 8 pages ms per page | attention x27, 1 page ms |")
print("|---|---|---|---|")
x1, x8 = w(N, C) * 50, w(8 * N, C) * 50
q, k, v = (w(1, H, N, D) * 50 for _ in range(3))
for name, be in backends:
    try:
        ctx = sdpa_kernel([be]) if be is not None else contextlib.nullcontext()
        with torch.inference_mode(), ctx:
            t1 = median_ms(lambda: tower(x1, 1))
            t8 = median_ms(lambda: tower(x8, 8), reps=3) / 8
            ta = median_ms(lambda: attention_only(q, k, v))
        print(f"| {name} | {t1:.2f} | {t8:.2f} | {ta:.2f} |")
    except Exception as e:  # a backend that refuses head dim 72 or this card
        print(f"| {name} | refused: {str(e).splitlines()[0][:80]} | | |")
with torch.inference_mode():
    tg = median_ms(lambda: gemms_only(x1))
    tg8 = median_ms(lambda: gemms_only(x8), reps=3) / 8
flops = 2 * N * L * (4 * C * C + 2 * C * I)
print(f"\nmatrix products alone: {tg:.2f} ms per page at 1 page ({flops / tg / 1e9:.0f} TFLOP/s), "
      f"{tg8:.2f} at 8 pages ({flops / tg8 / 1e9:.0f} TFLOP/s)")
af = 4 * N * N * C * L
print(f"attention FLOPs per page {af / 1e12:.2f} TFLOP; products {flops / 1e12:.2f} TFLOP\n")

# --- 2. the tower beside memory-bound decode steps ---
B, CTX, KVH, HD = DECODE_B, DECODE_CTX, DECODE_KVH, DECODE_HD
decode_step = decode_stand_in()


hi = torch.cuda.Stream(priority=-5)
lo = torch.cuda.Stream(priority=0)
with torch.inference_mode():
    g = graph_of(decode_step, hi)
    t_step = median_ms(lambda: replay(g, hi, 20)) / 20
    kv = 24 * 2 * B * KVH * CTX * HD * 2 / 1e9
    print("## Vision beside decoding (stand-in decode step: batch 64, context 1200, torch ops in a CUDA graph)\n")
    print(f"decode step alone {t_step:.3f} ms (K/V {kv:.1f} GB + weights 1.3 GB: "
          f"{(kv + 1.3) / t_step:.2f} TB/s)\n")
    print("| vision stream priority | tower 8 pages alone ms | tower beside steps ms | steps done meanwhile | "
          "step beside tower ms | sum alone / together |")
    print("|---|---|---|---|---|---|")
    for prio_name, vs in (("low (decode high)", lo), ("same", torch.cuda.Stream(priority=-5))):
        with torch.cuda.stream(vs):
            t_vis = median_ms(lambda: tower(x8, 8), reps=3)
        t_vis_shared, n, wall = beside(lambda: tower(x8, 8), vs, g, hi)
        print(f"| {prio_name} | {t_vis:.1f} | {t_vis_shared:.1f} | {n} | {wall / max(n, 1):.3f} | "
              f"{(t_vis + n * t_step) / max(wall, t_vis_shared):.2f} |")
