// kv_format_error: how far an 8-bit K/V format moves one attention head's output, on random data, in float64.
// A CPU estimate beside bench/gpu/probe_fp8_kv.py (which measures the logits of the full-size random model on
// the GPU): it compares the formats' error with each other, not with the parity bar. 64 heads of a page's
// context (1076 keys of 128 dims, standard normal q, K and V, softmax scale 1/sqrt(128)); K and V quantized
// apart; relative L2 of the output against the unquantized one, over all heads.
//   g++ -O2 -std=c++20 bench/gpu/kv_format_error.cpp -o /tmp/kv_format_error && /tmp/kv_format_error
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

// Rounds to nearest (ties to even) on a grid of 2^(e - mantissaBits) below each power of two 2^e, e >= minExp.
double roundFloat(double x, int mantissaBits, int minExp)
{
    const double a = std::fabs(x);
    if (a == 0) return 0;
    const int e = std::max(int(std::floor(std::log2(a))), minExp);
    const double step = std::ldexp(1.0, e - mantissaBits);
    return std::copysign(std::nearbyint(a / step) * step, x);
}
double e4m3Sat(double x) { return std::copysign(std::min(std::fabs(roundFloat(x, 3, -6)), 448.0), x); }
double f16(double x) { return roundFloat(x, 10, -14); }

enum Format { Float16, E4m3Row, Int8Row, E4m3Unit, kFormats };
const char* kNames[] = {"float16", "float8 e4m3, scale per token and head", "int8, scale per token and head",
                        "float8 e4m3, scale 1"};

// Each row of n x d through the format (the per-row scales: amax / 448 for e4m3, amax / 127 for int8).
std::vector<double> quantize(std::vector<double> m, int n, int d, Format f)
{
    for (int t = 0; t < n; ++t) {
        double amax = 0;
        for (int i = 0; i < d; ++i) amax = std::max(amax, std::fabs(m[size_t(t) * d + i]));
        for (int i = 0; i < d; ++i) {
            double& x = m[size_t(t) * d + i];
            if (f == Float16) x = f16(x);
            else if (f == E4m3Row) x = amax > 0 ? e4m3Sat(x / (amax / 448)) * (amax / 448) : 0;
            else if (f == Int8Row) x = amax > 0 ? std::clamp(std::nearbyint(x / (amax / 127)), -127.0, 127.0) * (amax / 127) : 0;
            else x = e4m3Sat(x);
        }
    }
    return m;
}

std::vector<double> attend(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v, int n, int d)
{
    std::vector<double> logit(static_cast<size_t>(n)), out(static_cast<size_t>(d), 0.0);
    double mx = -INFINITY, sum = 0;
    for (int t = 0; t < n; ++t) {
        double s = 0;
        for (int i = 0; i < d; ++i) s += q[size_t(i)] * k[size_t(t) * d + i];
        logit[size_t(t)] = s / std::sqrt(double(d));
        mx = std::max(mx, logit[size_t(t)]);
    }
    for (double& l : logit) sum += (l = std::exp(l - mx));
    for (int t = 0; t < n; ++t)
        for (int i = 0; i < d; ++i) out[size_t(i)] += logit[size_t(t)] / sum * v[size_t(t) * d + i];
    return out;
}

}  // namespace

int main()
{
    constexpr int n = 1076, d = 128, heads = 64;
    std::mt19937 rng(5);
    std::normal_distribution<double> normal(0, 1);
    double err[kFormats][2] = {}, norm = 0;
    for (int h = 0; h < heads; ++h) {
        std::vector<double> k(size_t(n) * d), v(size_t(n) * d), q(d);
        for (double* m : {k.data(), v.data()})
            for (size_t i = 0; i < size_t(n) * d; ++i) m[i] = normal(rng);
        for (double& x : q) x = normal(rng);
        const std::vector<double> ref = attend(q, k, v, n, d);
        for (double x : ref) norm += x * x;
        for (int f = 0; f < kFormats; ++f) {
            const std::vector<double> kq = attend(q, quantize(k, n, d, Format(f)), v, n, d);
            const std::vector<double> vq = attend(q, k, quantize(v, n, d, Format(f)), n, d);
            for (int i = 0; i < d; ++i) {
                err[f][0] += (kq[size_t(i)] - ref[size_t(i)]) * (kq[size_t(i)] - ref[size_t(i)]);
                err[f][1] += (vq[size_t(i)] - ref[size_t(i)]) * (vq[size_t(i)] - ref[size_t(i)]);
            }
        }
    }
    std::printf("| K/V format | K alone: output rel. L2 | V alone | of e4m3 with a scale per token and head (K / V) |\n|---|---|---|---|\n");
    for (int f = 0; f < kFormats; ++f)
        std::printf("| %s | %.2e | %.2e | %.2f / %.2f |\n", kNames[f], std::sqrt(err[f][0] / norm), std::sqrt(err[f][1] / norm),
                    std::sqrt(err[f][0] / err[E4m3Row][0]), std::sqrt(err[f][1] / err[E4m3Row][1]));
}
