#!/usr/bin/env python3
"""Probe: can the vision tower (compute-bound) and decode steps (memory-bound) share the H200 if each gets
its own SMs? (torch only, random weights, HunyuanOCR shapes.)

Call 46 put the tower on a low-priority stream beside decode steps and gained nothing: the tower's GEMM
CTAs take every SM and a running CTA is never preempted, so the steps waited. A CUDA green context
(driver API, CUDA 12.4+) confines a stream's kernels to a set of SMs. Here the tower runs on a green
context of N SMs while a stand-in decode step (batch 64, context 1200, 24 layers of torch ops in a CUDA
graph, as in probe_vision.py) replays on the remaining SMs, or on an ordinary stream (all SMs), and each
split is compared with running the same work one after the other on the whole card.

Prints a markdown table; "serial / together" > 1 means the split overlaps usefully. Call 174: 1.18-1.21
at 64 to 112 SMs for the tower (1.11 on two ordinary streams). The engine built on it (commit 4a1edcb:
the tower beside the decoder whenever other pages were being decoded) was slower in bursts, because there
the decoder's work beside the tower is the next pages' prefill, compute-bound too (docs/perf.md, call 175).
"""
import ctypes

import torch
import torch.nn.functional as F

from probe_common import C, D, H, N, beside, decode_stand_in, graph_of, median_ms, random_tower_blocks, replay, w

cu = ctypes.CDLL("libcuda.so.1")
RES = 144  # sizeof(CUdevResource), CUDA 13 headers; the SM part (CUdevSmResource) at byte 96


def check(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what} failed: CUresult {rc}")


def sm_count(res):
    return int.from_bytes(bytes(res[96:100]), "little")


def green_streams(n_sms):
    """Two green contexts: about n_sms SMs and the rest; a non-blocking stream in each."""
    torch.cuda.init()
    dev = ctypes.c_int()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    whole = (ctypes.c_ubyte * RES)()
    check(cu.cuDeviceGetDevResource(dev, whole, 1), "cuDeviceGetDevResource")  # CU_DEV_RESOURCE_TYPE_SM
    group, rest = (ctypes.c_ubyte * RES)(), (ctypes.c_ubyte * RES)()
    groups = ctypes.c_uint(1)
    check(cu.cuDevSmResourceSplitByCount(group, ctypes.byref(groups), whole, rest, 0, n_sms),
          "cuDevSmResourceSplitByCount")
    out = []
    for res in (group, rest):
        desc, ctx, stream = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        check(cu.cuDevResourceGenerateDesc(ctypes.byref(desc), res, 1), "cuDevResourceGenerateDesc")
        check(cu.cuGreenCtxCreate(ctypes.byref(ctx), desc, dev, 1), "cuGreenCtxCreate")  # CU_GREEN_CTX_DEFAULT_STREAM
        check(cu.cuGreenCtxStreamCreate(ctypes.byref(stream), ctx, 1, 0), "cuGreenCtxStreamCreate")
        out.append((sm_count(res), torch.cuda.ExternalStream(stream.value)))
    return out


blocks = random_tower_blocks()


def tower(x, pages):
    n = x.shape[0] // pages
    for b in blocks:
        h = F.layer_norm(x, (C,), b["ln1w"], b["ln1b"], 1e-5)
        qkv = F.linear(h, b["qkv"], b["qkvb"])
        t = qkv.view(pages, n, 3, H, D).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(t[0], t[1], t[2]).permute(0, 2, 1, 3).reshape(pages * n, C)
        x = x + F.linear(o, b["o"], b["ob"])
        h = F.gelu(F.linear(F.layer_norm(x, (C,), b["ln2w"], b["ln2b"], 1e-5), b["f1"], b["f1b"]))
        x = x + F.linear(h, b["f2"], b["f2b"])
    return x


decode_step = decode_stand_in()


def on(stream, fn):
    with torch.cuda.stream(stream):
        return fn()


with torch.inference_mode():
    full_v, full_d = torch.cuda.Stream(), torch.cuda.Stream()
    x8 = w(8 * N, C) * 50
    g = graph_of(decode_step, full_d)
    t_v = on(full_v, lambda: median_ms(lambda: tower(x8, 8), reps=3))
    t_s = on(full_d, lambda: median_ms(lambda: replay(g, full_d, 20)) / 20)
    print(f"whole card: tower over 8 pages {t_v:.1f} ms ({t_v / 8:.2f} a page), decode step {t_s:.3f} ms\n")
    print("| tower SMs | decode SMs | tower alone ms | step alone ms | tower beside steps ms | steps meanwhile "
          "| step beside tower ms | serial / together |")
    print("|---|---|---|---|---|---|---|---|")

    def row(label_v, label_d, vs, ds):
        tv = on(vs, lambda: median_ms(lambda: tower(x8, 8), reps=3))
        ts = on(ds, lambda: median_ms(lambda: replay(g, ds, 20)) / 20)
        results = [beside(lambda: tower(x8, 8), vs, g, ds) for _ in range(3)]
        tvs, n, wall = sorted(results, key=lambda r: r[2])[1]
        print(f"| {label_v} | {label_d} | {tv:.1f} | {ts:.3f} | {tvs:.1f} | {n} | {wall / max(n, 1):.3f} | "
              f"{(t_v + n * t_s) / max(wall, tvs):.2f} |", flush=True)

    row("all", "all (two ordinary streams)", full_v, full_d)
    for n_sms in (64, 80, 96, 104, 112, 120):
        try:
            (nv, vs), (nd, ds) = green_streams(n_sms)
        except RuntimeError as e:
            print(f"| {n_sms} | | {e} | | | | | |")
            continue
        row(str(nv), f"{nd} (green)", vs, ds)
        row(str(nv), "all (ordinary stream)", vs, full_d)
