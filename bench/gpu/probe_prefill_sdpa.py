"""Would libtorch's scaled-dot-product attention do a fresh prompt's prefill attention faster than ours?

The decoder's prefill attention (causal, 16 query / 8 KV heads of 128, float16) for 1 to 8 prompts of a
page's 1076 tokens, through each SDPA backend of the installed torch, on q, k and v as the views of one
[tokens, 4096] qkv buffer the runner holds (no copies), 24 layers of distinct buffers in a CUDA graph.
bench_prefill times our kernel on the same shapes ("the prefill attention alone"); run both in one call.
Only prompts of one length fit one SDPA call; each backend's first result is checked against the math
backend on float32. Usage (GPU machine): python3 bench/gpu/probe_prefill_sdpa.py [--tokens 1076]
[--first-calls: only what a new shape's first call costs].
First run: device call 207 (H100, docs/perf.md): cuDNN with enable_gqa 1.6x (1 prompt) to 2.1x (8) faster than
ours; flash no faster; memory-efficient takes no GQA. About a minute of device time. --first-calls (call 209):
a new shape's first call costs cuDNN 38-44 ms (its plan; the process's first 0.94 s) against 0.15-0.23 after.
Built into the runner for runs of whole prompts of one length (62d313a), it gained nothing measurable in the
engine's bursts and was reverted (call 210, docs/perf.md).
"""
import argparse
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from probe_common import graph_of, median_ms  # noqa: E402

HQ, HKV, HD, LAYERS = 16, 8, 128, 24


def views(qkv, prompts, tokens):
    """q [B, 16, T, 128], k and v [B, 8, T, 128]: strided views of the runner's qkv rows (no copy)."""
    x = qkv.view(prompts, tokens, HQ + 2 * HKV, HD)
    q = x[:, :, :HQ].transpose(1, 2)
    k = x[:, :, HQ:HQ + HKV].transpose(1, 2)
    v = x[:, :, HQ + HKV:].transpose(1, 2)
    return q, k, v


def attend(q, k, v, expand):
    if expand:  # backends without GQA: each KV head repeated for its two query heads (a copy)
        k = k.repeat_interleave(HQ // HKV, dim=1)
        v = v.repeat_interleave(HQ // HKV, dim=1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


def first_calls():
    """What cuDNN's first call for a new (prompts, length) costs (it builds the shape's plan then) against
    the second, eager and synchronised: what a step of a shape the process has not seen yet pays."""
    import time
    print("| prompts | tokens | first call ms | second call ms |")
    print("|---|---|---|---|")
    for T in (1076, 700):
        for prompts in (1, 2, 3, 4, 7, 8):
            buf = torch.randn(prompts * T, (HQ + 2 * HKV) * HD, device="cuda", dtype=torch.float16)
            q, k, v = views(buf, prompts, T)
            times = []
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                for _ in range(2):
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    attend(q, k, v, expand=False)
                    torch.cuda.synchronize()
                    times.append((time.perf_counter() - t0) * 1000)
            print(f"| {prompts} | {T} | {times[0]:.2f} | {times[1]:.3f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=1076)
    ap.add_argument("--first-calls", action="store_true", help="only the first-call (plan) cost per shape")
    args = ap.parse_args()
    if args.first_calls:
        return first_calls()
    T = args.tokens
    print(f"# SDPA for a prefill: {T}-token prompts, {HQ} query / {HKV} KV heads of {HD}, float16, causal, "
          f"torch {torch.__version__}, {torch.cuda.get_device_name()}\n")
    print("| prompts | backend | GQA | us a layer | causal TFLOP/s | max abs diff vs float32 math |")
    print("|---|---|---|---|---|---|")
    torch.manual_seed(0)
    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
    for prompts in (1, 2, 4, 8):
        bufs = [torch.randn(prompts * T, (HQ + 2 * HKV) * HD, device="cuda", dtype=torch.float16)
                for _ in range(LAYERS)]
        q, k, v = views(bufs[0], prompts, T)
        with sdpa_kernel(SDPBackend.MATH):
            ref = attend(q.float(), k.float(), v.float(), expand=False)
        # causal FLOPs: QK^T and PV over the lower triangle
        flop = 4.0 * prompts * HQ * HD * T * (T + 1) / 2
        for name, be in backends:
            for expand in (False, True):
                gqa = "expanded (copy timed)" if expand else "enable_gqa"
                try:
                    with sdpa_kernel(be):
                        out = attend(q, k, v, expand)
                        diff = (out.float() - ref).abs().max().item()
                        layers = [views(b, prompts, T) for b in bufs]

                        def run():
                            for lq, lk, lv in layers:
                                attend(lq, lk, lv, expand)
                        # in a CUDA graph: the host's launches would bound a single prompt's ~20-40 us
                        try:
                            g = graph_of(run, torch.cuda.Stream())
                            ms, how = median_ms(g.replay, reps=7, launches=3, warmup=2), ""
                        except RuntimeError:
                            ms, how = median_ms(run, reps=7, launches=1, warmup=2), " (eager: no graph)"
                except RuntimeError as e:
                    print(f"| {prompts} | {name} | {gqa} | not available "
                          f"({str(e).splitlines()[0][:80]}) | | |")
                    continue
                us = ms * 1000 / LAYERS
                print(f"| {prompts} | {name} | {gqa} | {us:.1f}{how} | "
                      f"{flop / (us * 1e-6) / 1e12:.0f} | {diff:.1e} |")
        del bufs
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
