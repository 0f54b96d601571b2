"""Shared by the torch-only probes under bench/gpu: the vision tower's shapes and random weights, and the
median over reps of CUDA-event spans."""
import statistics

import torch

dev, dt = "cuda", torch.float16
# The tower: hidden, heads, head dim, MLP width, blocks; patches of a 1024x1024 page.
C, H, D, I, L, N = 1152, 16, 72, 4304, 27, 4096


def w(*shape):
    """Random float16 values on the GPU, standard deviation 0.02 (torch's current seed)."""
    return torch.randn(*shape, device=dev, dtype=dt) * 0.02


def random_tower_blocks(seed=0):
    """The tower's 27 blocks with random float16 weights (LayerNorm weights near 1), seeded."""
    torch.manual_seed(seed)
    return [dict(ln1w=w(C) + 1, ln1b=w(C), qkv=w(3 * C, C), qkvb=w(3 * C), o=w(C, C), ob=w(C),
                 ln2w=w(C) + 1, ln2b=w(C), f1=w(I, C), f1b=w(I), f2=w(C, I), f2b=w(C)) for _ in range(L)]


def median_ms(fn, reps=5, launches=1, warmup=1):
    """Median milliseconds of one call of fn: warmup calls first, then reps spans of `launches` calls each."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(launches):
            fn()
        b.record()
        b.synchronize()
        samples.append(a.elapsed_time(b) / launches)
    return statistics.median(samples)
