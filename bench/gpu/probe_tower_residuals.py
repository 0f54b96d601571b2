#!/usr/bin/env python3
"""Probe: the vision tower's residual adds folded into its matrix products (torch only, random weights).

The tower as the engine runs it (27 blocks over 4096-patch pages, attention per page through SDPA) against
the same math with each residual add inside the product before it: x += [a, 1, 0..] [W, b, 0..]^T as one
in-place addmm (cuBLAS with beta = 1). The ones column carries the bias, so the product writes x + a W^T + b
once instead of writing a W^T + b and then reading x and it again. The attention output and the GELU land
in buffers 8 columns wider whose ones column is set once per call (the engine's attention kernel takes an
output row stride, so it would write there directly). Also: the MLP over row chunks of one page, so fc1's
output (35 MB a page) stays in the L2 for the GELU and fc2.

Prints ms a page at 1 and 8 pages for each variant and the largest difference from the plain tower
(relative to its largest value). Used to decide whether the engine's tower takes the folded form.
"""
import torch
import torch.nn.functional as F

from probe_common import C, D, H, I, N, dev, dt, median_ms, random_tower_blocks

PAD = 8  # the ones column and zeros: keeps rows 16-byte aligned
blocks = random_tower_blocks()
for b in blocks:  # the folded weights: [W, b, 0 ...]
    b["o_aug"] = torch.cat([b["o"], b["ob"][:, None], torch.zeros(C, PAD - 1, device=dev, dtype=dt)], 1).contiguous()
    b["f2_aug"] = torch.cat([b["f2"], b["f2b"][:, None], torch.zeros(C, PAD - 1, device=dev, dtype=dt)], 1).contiguous()


def attend(h, b, pages):
    n = h.shape[0] // pages
    qkv = F.linear(h, b["qkv"], b["qkvb"]).view(pages, n, 3, H, D).permute(2, 0, 3, 1, 4)
    return F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2]).permute(0, 2, 1, 3)  # [pages, n, H, D]


def plain(x, pages, chunked=False):
    for b in blocks:
        a = attend(F.layer_norm(x, (C,), b["ln1w"], b["ln1b"], 1e-5), b, pages).reshape(x.shape[0], C)
        x = x + F.linear(a, b["o"], b["ob"])
        rows = N if chunked else x.shape[0]
        out = torch.empty_like(x)
        for s in range(0, x.shape[0], rows):
            xs = x[s:s + rows]
            hs = F.gelu(F.linear(F.layer_norm(xs, (C,), b["ln2w"], b["ln2b"], 1e-5), b["f1"], b["f1b"]))
            torch.add(xs, F.linear(hs, b["f2"], b["f2b"]), out=out[s:s + rows])
        x = out
    return x


def folded(x, pages, chunked=False):
    x = x.clone()
    m = x.shape[0]
    rows = N if chunked else m
    a_aug = torch.zeros(m, C + PAD, device=dev, dtype=dt)
    a_aug[:, C] = 1
    h_aug = torch.zeros(rows, I + PAD, device=dev, dtype=dt)
    h_aug[:, I] = 1
    for b in blocks:
        a = attend(F.layer_norm(x, (C,), b["ln1w"], b["ln1b"], 1e-5), b, pages)
        a_aug[:, :C].view(pages, m // pages, H, D).copy_(a)  # the engine's kernel writes here directly
        x.addmm_(a_aug, b["o_aug"].t())
        for s in range(0, m, rows):
            xs = x[s:s + rows]
            t = F.linear(F.layer_norm(xs, (C,), b["ln2w"], b["ln2b"], 1e-5), b["f1"], b["f1b"])
            torch.ops.aten.gelu.out(t, out=h_aug[:xs.shape[0], :I])
            xs.addmm_(h_aug[:xs.shape[0]], b["f2_aug"].t())
    return x


def main():
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("\n| variant | 1 page, ms | 8 pages, ms a page | largest difference from plain (relative) |\n|---|---|---|---|")
    with torch.inference_mode():
        for name, fn, chunked in (("plain", plain, False), ("plain, MLP by page", plain, True),
                                  ("folded residuals", folded, False), ("folded, MLP by page", folded, True)):
            cells = []
            for pages in (1, 8):
                x = torch.randn(pages * N, C, device=dev, dtype=dt)
                cells.append(median_ms(lambda: fn(x, pages, chunked), reps=7) / pages)
            x = torch.randn(2 * N, C, device=dev, dtype=dt)
            ref = plain(x, 2).float()
            diff = ((fn(x, 2, chunked).float() - ref).abs().max() / ref.abs().max()).item()
            print(f"| {name} | {cells[0]:.2f} | {cells[1]:.2f} | {diff:.2e} |")
        # Where the plain tower's time goes at 8 pages, by kernel (the profiler's CUDA time).
        from torch.profiler import ProfilerActivity, profile
        x = torch.randn(8 * N, C, device=dev, dtype=dt)
        for label, fn in (("plain", plain), ("folded", folded)):
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn(x, 8)
                torch.cuda.synchronize()
            totals = {}
            for e in prof.events():
                if e.device_type == torch.autograd.DeviceType.CUDA:
                    totals[e.name[:90]] = totals.get(e.name[:90], 0.0) + e.device_time_total / 1e3
            print(f"\n{label}, 8 pages: ms a page by kernel\n\n| kernel | ms a page |\n|---|---|")
            for k, v in sorted(totals.items(), key=lambda kv: -kv[1])[:14]:
                print(f"| {k} | {v / 8:.3f} |")


if __name__ == "__main__":
    main()
