#!/usr/bin/env python3
"""Probe: what cuBLAS's algorithm choice leaves on the table for HunyuanOCR's matrix products (torch only).

The vision tower's four products (qkv, o, fc1, fc2, with bias) over one page (4096 patches) and over a
vision step of 8 pages, the decoder's four over a page's prefill (1076 rows) and over decode steps of
32 and 64 sequences, each timed three ways in one process:
  - torch's default (cuBLAS, its heuristic's first algorithm);
  - torch.backends.cuda.preferred_blas_library("cublaslt");
  - TunableOp (torch.cuda.tunable): every algorithm cuBLAS / cuBLASLt offer for the shape timed, the
    fastest kept. The engine could take the same by PYTORCH_TUNABLEOP_ENABLED with a results file.
Prints a markdown table: us a product and TFLOP/s. Random float16 inputs; results are not checked
(the algorithms are cuBLAS's own).
"""
import sys

import torch
import torch.nn.functional as F

from probe_common import dev, dt, median_ms

torch.manual_seed(0)

# (name, rows, in features, out features, bias)
SHAPES = []
for pages in (1, 8):
    m = 4096 * pages
    SHAPES += [(f"tower qkv, {pages} page(s)", m, 1152, 3456, True), (f"tower o, {pages}", m, 1152, 1152, True),
               (f"tower fc1, {pages}", m, 1152, 4304, True), (f"tower fc2, {pages}", m, 4304, 1152, True)]
for m, what in ((1076, "prefill"), (64, "decode b64"), (32, "decode b32")):
    SHAPES += [(f"{what} qkv", m, 1024, 4096, False), (f"{what} o", m, 2048, 1024, False),
               (f"{what} gate/up", m, 1024, 7168, False), (f"{what} down", m, 3584, 1024, False)]


def tensors(m, k, n, bias):
    x = torch.randn(m, k, device=dev, dtype=dt)
    w = torch.randn(n, k, device=dev, dtype=dt) * 0.02
    b = torch.randn(n, device=dev, dtype=dt) if bias else None
    return x, w, b


def run_all(label):
    out = {}
    for name, m, k, n, bias in SHAPES:
        x, w, b = tensors(m, k, n, bias)
        try:
            out[name] = 1e3 * median_ms(lambda: F.linear(x, w, b), reps=15, launches=10, warmup=3)
        except Exception as e:  # one mode failing must not hide the others
            print(f"{label} {name}: {e}", file=sys.stderr)
            out[name] = float("nan")
    return out


def main():
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, cuBLAS {torch.backends.cuda.preferred_blas_library()}")
    modes = {}
    modes["default"] = run_all("default")
    try:
        torch.backends.cuda.preferred_blas_library("cublaslt")
        modes["cublasLt"] = run_all("cublaslt")
    except Exception as e:
        print(f"cublaslt: {e}", file=sys.stderr)
    finally:
        torch.backends.cuda.preferred_blas_library("cublas")
    try:
        import torch.cuda.tunable as tunable
        tunable.enable(True)
        tunable.tuning_enable(True)
        tunable.set_max_tuning_iterations(30)
        tunable.set_filename(sys.argv[1] if len(sys.argv) > 1 else "tunableop_results.csv")
        run_all("tunable (tuning)")  # the first call of each shape tunes it
        tunable.tuning_enable(False)
        modes["TunableOp"] = run_all("tunable")  # its results file is written at exit
    except Exception as e:
        print(f"tunableop: {e}", file=sys.stderr)
    names = list(modes)
    print("\n| product | rows x in x out | " + " | ".join(f"{n}, us (TFLOP/s)" for n in names) + " | best vs default |")
    print("|---|---|" + "---|" * len(names) + "---|")
    for name, m, k, n, _ in SHAPES:
        flop = 2.0 * m * k * n
        cells = [f"{modes[x][name]:.1f} ({flop / modes[x][name] / 1e6:.0f})" for x in names]
        best = min(modes[x][name] for x in names)
        print(f"| {name} | {m} x {k} x {n} | " + " | ".join(cells) + f" | {modes['default'][name] / best:.3f}x |")
    for x in names:
        tower = sum(modes[x][s[0]] for s in SHAPES if s[0].startswith("tower") and s[1] == 32768) * 27 / 8 / 1e3
        print(f"{x}: the tower's products over 8 pages, ms a page (27 layers): {tower:.2f}")


if __name__ == "__main__":
    main()
