"""Timing for the torch-only probes under bench/gpu: the median over reps of CUDA-event spans."""
import statistics

import torch


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
