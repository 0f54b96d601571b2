"""Shared by the torch-only probes under bench/gpu: the vision tower's shapes and random weights, a stand-in
decode step, and the median over reps of CUDA-event spans."""
import statistics
import time

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


# The stand-in decode step: sequences, context, KV heads, head dim.
DECODE_B, DECODE_CTX, DECODE_KVH, DECODE_HD = 64, 1200, 8, 128


def decode_stand_in():
    """One decode step of DECODE_B sequences at a DECODE_CTX-token context with the decoder's shapes and
    random weights, in torch ops: 24 layers of skinny products plus one read of each layer's K/V, and the
    LM head. Returns the function that runs it (memory-bound, like the engine's batched decode steps)."""
    B, KVH, HD = DECODE_B, DECODE_KVH, DECODE_HD
    lw = [dict(qkv=w(4096, 1024), o=w(1024, 2048), gu=w(7168, 1024), dn=w(1024, 3584),
               k=w(B, KVH, DECODE_CTX, HD), v=w(B, KVH, DECODE_CTX, HD)) for _ in range(24)]
    lm = w(120818, 1024)
    xd = w(B, 1024)

    def step():
        h = xd
        for l in lw:
            qkv = torch.nn.functional.linear(h, l["qkv"])
            q = qkv[:, :2048].view(B, KVH, 2, HD)
            s = torch.matmul(q, l["k"].transpose(-1, -2))  # [B, KVH, 2, CTX]: reads K once
            a = torch.matmul(torch.softmax(s.float(), -1).to(dt), l["v"]).reshape(B, 2048)
            h = h + torch.nn.functional.linear(a, l["o"])
            gu = torch.nn.functional.linear(h, l["gu"])
            h = h + torch.nn.functional.linear(torch.nn.functional.silu(gu[:, :3584]) * gu[:, 3584:], l["dn"])
        return torch.nn.functional.linear(h, lm)

    return step


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


def graph_of(fn, stream):
    """fn captured in a CUDA graph on `stream` (after one eager run there)."""
    with torch.cuda.stream(stream):
        fn()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=stream):
            fn()
    torch.cuda.synchronize()
    return g


def replay(g, stream, n):
    """n replays of graph g queued on `stream`."""
    with torch.cuda.stream(stream):
        for _ in range(n):
            g.replay()


def beside(work, work_stream, g, step_stream):
    """work() queued on work_stream while graph g replays on step_stream until work is done: (work's ms by
    CUDA events, replays done meanwhile, wall ms until the last of them ended)."""
    torch.cuda.synchronize()
    done = torch.cuda.Event()
    a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(work_stream):
        a.record()
        work()
        z.record()
        done.record()
    n = 0
    t0 = time.perf_counter()
    while not done.query():
        replay(g, step_stream, 1)
        n += 1
        if n % 4 == 0:  # a few replays ahead at most, so that the count ends near the work's end
            step_stream.synchronize()
    step_stream.synchronize()
    wall = (time.perf_counter() - t0) * 1e3
    torch.cuda.synchronize()
    return a.elapsed_time(z), n, wall
