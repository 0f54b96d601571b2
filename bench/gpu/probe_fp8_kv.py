"""What an 8-bit KV cache (float8 or integer) would cost in accuracy, on the full-size random model (issue 4's parity setting).

The two targets of issue 4 still unmet on the H200 (the batch-32 decode step at 5x torch.compile, 64 pages at
40 pages/s) are bound by reading K/V: at 32 sequences and a page's context, K/V is ~3.4 GB a step against ~1.1
GB of weights. An 8-bit cache (vLLM's kv_cache_dtype=fp8) halves those bytes but changes what float16
promises, so it is the owner's decision. This probe gives that decision its accuracy figure; the speed side is
bench_decode_step at half the context (the same K/V bytes as 8 bits at the full one).

It builds the model of `hunyuan_reference.py --size full` (by default the parity check's seed), runs each page
in float32 (the reference) and greedy-decodes 32 tokens, then runs float16 and bfloat16 with every K/V entering
the cache rounded through an 8-bit format, the 32 reference tokens forced (so one wrong step does not change the
rest):
  none          K/V in the weights' dtype, as the engine stores them now
  e4m3          float8 e4m3, scale 1 (vLLM's fp8 cache without calibrated scales)
  e4m3-head     float8 e4m3, a dynamic scale per token and KV head (amax / 448)
  e5m2          float8 e5m2, scale 1
  K e4m3-head   only K through e4m3-head, V as it is (a quarter of the bytes saved, not half)
  V e4m3-head   only V through e4m3-head
  int8-head     8-bit integers, a scale per token and KV head (amax / 127), rounded to nearest: 7 bits of
                resolution over the whole range where e4m3 has 3 of mantissa, and a kernel widens each with a byte
                permute and a subtraction, the scales riding on the logits (K) and the probabilities (V)
  K int8-head   only K through int8-head
  V int8-head   only V through int8-head
Each row: the prefill's last logits against float32 (relative L2; the parity bar is 2e-2), the worst of the
32 forced steps, and the steps whose argmax equals float32's where float32's top-2 margin exceeds 0.05 (the
parity check's rule). Every read of the cache sees the rounded values, the prefill's attention too, as in
the engine, where prefill attention reads the paged cache.

  python3 bench/gpu/probe_fp8_kv.py --images /tmp/page_1024.png [more pages] [--tools ../shared/tools] [--seed 1234]
      [--dtypes float16,bfloat16]
"""
import argparse
import copy
import json
import os
import sys

import torch


def quantizers():
    def e4m3(x):
        return x.float().clamp(-448, 448).to(torch.float8_e4m3fn).to(x.dtype)

    def e4m3_head(x):  # x: [batch, kv heads, tokens, head dim]; one scale per (token, head)
        s = x.float().abs().amax(-1, keepdim=True).clamp(min=1e-12) / 448
        return ((x.float() / s).to(torch.float8_e4m3fn).float() * s).to(x.dtype)

    def int8_head(x):  # symmetric, round to nearest; one scale per (token, head)
        s = x.float().abs().amax(-1, keepdim=True).clamp(min=1e-12) / 127
        return ((x.float() / s).round().clamp(-127, 127) * s).to(x.dtype)

    def e5m2(x):
        return x.float().clamp(-57344, 57344).to(torch.float8_e5m2).to(x.dtype)

    def same(x):
        return x

    # name -> (what K goes through, what V goes through), or None for the cache as it is
    return {"none": None, "e4m3": (e4m3, e4m3), "e4m3-head": (e4m3_head, e4m3_head), "e5m2": (e5m2, e5m2),
            "K e4m3-head": (e4m3_head, same), "V e4m3-head": (same, e4m3_head),
            "int8-head": (int8_head, int8_head), "K int8-head": (int8_head, same), "V int8-head": (same, int8_head)}


class CacheRounding:
    """Wraps DynamicCache.update() so K/V are rounded before they are stored; counts the calls, so a
    transformers version that bypasses update() fails loudly instead of measuring nothing."""

    def __init__(self):
        from transformers import DynamicCache
        self.fn, self.calls = None, 0
        original = DynamicCache.update  # its own or inherited: wrapped once, on the class the model creates

        def update(cache, key_states, value_states, *args, **kwargs):
            if self.fn is not None:
                key_states, value_states = self.fn[0](key_states), self.fn[1](value_states)
                self.calls += 1
            return original(cache, key_states, value_states, *args, **kwargs)

        DynamicCache.update = update


def rel_l2(a, b):
    return float((a.float() - b.float()).norm() / b.float().norm())


@torch.no_grad()
def run(model, inputs, steps, dev, forced=None):
    """Prefill, then a token a step until `steps` tokens are chosen: forced[s] where given, else the argmax
    (greedy). Returns the tokens and the last-position logits (float32) that chose each."""
    ids, pv, thw, mm, pos = inputs
    out = model(input_ids=ids, pixel_values=pv, image_grid_thw=thw, position_ids=pos, mm_token_type_ids=mm,
                use_cache=True)
    logits, past, L = [out.logits[0, -1].float()], out.past_key_values, ids.shape[1]
    tokens = []
    for s in range(steps):
        tokens.append(forced[s] if forced else int(logits[-1].argmax()))
        if s + 1 == steps:
            break  # the last token's successor is not needed
        p = torch.full((4, 1, 1), L + s, dtype=torch.long, device=dev)
        o = model(input_ids=torch.tensor([[tokens[-1]]], device=dev), position_ids=p, past_key_values=past,
                  use_cache=True)
        past = o.past_key_values
        logits.append(o.logits[0, -1].float())
    return tokens, logits


def greedy_reference(model, inputs, steps, dev):
    """float32 greedy decode: the tokens, the logits that chose each, and their top-2 margins."""
    tokens, logits = run(model, inputs, steps, dev)
    top2 = [torch.topk(r, 2).values for r in logits]
    return tokens, logits, [float(t[0] - t[1]) for t in top2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", nargs="+", required=True)
    ap.add_argument("--tools", default=os.environ.get("LECTOR_SHARED_DIR", "../shared") + "/tools")
    ap.add_argument("--seed", type=int, default=1234, help="the random model's (1234: the parity check's)")
    ap.add_argument("--dtypes", default="float16,bfloat16")
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--kv", default="", help="comma-separated K/V formats to run (default: all)")
    args = ap.parse_args()
    sys.path.insert(0, args.tools)
    import hunyuan_reference as R

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    R.align_with_vllm()
    dev = "cuda"
    model, _ = R.build("full", args.seed)
    ip = R.HunYuanVLImageProcessorPil(min_pixels=262144, max_pixels=4194304, patch_size=16, temporal_patch_size=1,
                                      merge_size=2, image_mean=R.MEAN, image_std=R.STD)
    pages = []
    for path in args.images:
        _, pv, thw, ids, mm, pos, _ = R.prepare(model, path, ip)
        pages.append((os.path.basename(path), (ids.to(dev), pv.to(dev), thw.to(dev), mm.to(dev), pos.to(dev))))
    rounding = CacheRounding()

    model = model.to(dev, torch.float32)
    refs = {name: greedy_reference(model, inputs, args.gen, dev) for name, inputs in pages}
    rows = []
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        low = copy.deepcopy(model).to(dtype)  # from the float32 weights each time (they are bfloat16 values)
        for name, inputs in pages:
            tokens, ref, margins = refs[name]
            inputs_low = (inputs[0], inputs[1].to(dtype), inputs[2], inputs[3], inputs[4])
            clear = [i for i, m in enumerate(margins) if m > 0.05]
            for kv, fn in quantizers().items():
                if args.kv and kv != "none" and kv not in args.kv.split(","):
                    continue
                rounding.fn, rounding.calls = fn, 0
                _, logits = run(low, inputs_low, args.gen, dev, forced=tokens)
                if fn is not None and rounding.calls == 0:
                    raise SystemExit(f"probe_fp8_kv: {kv}: the cache was never updated through update()")
                steps = [rel_l2(a, b) for a, b in zip(logits, ref)]
                agree = sum(int(logits[i].argmax()) == tokens[i] for i in clear)
                rows.append({"seed": args.seed, "dtype": dtype_name, "image": name, "kv": kv,
                             "last_logits_rel_l2": steps[0], "worst_step_rel_l2": max(steps), "greedy_agree": agree,
                             "greedy_clear_steps": len(clear), "distinct_tokens": len(set(tokens)),
                             "min_margin": min(margins)})
        rounding.fn = None
        del low

    print(f"| seed | weights | image | K/V in the cache | prefill's last logits, rel. L2 vs float32 | worst of {args.gen} "
          "forced steps | argmax = float32's where its margin > 0.05 | distinct tokens, least margin |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['seed']} | {r['dtype']} | {r['image']} | {r['kv']} | {r['last_logits_rel_l2']:.2e} | "
              f"{r['worst_step_rel_l2']:.2e} | {r['greedy_agree']} / {r['greedy_clear_steps']} | "
              f"{r['distinct_tokens']}, {r['min_margin']:.3f} |")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
