// bench_int8_kv: what an 8-bit integer KV cache (bench/gpu/kv_int8_prototype.cuh) does to decode attention,
// measured instead of the half-context proxy of docs/perf.md (calls 214 and 217). Without libtorch:
//   nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. bench/gpu/bench_int8_kv.cu \
//        gpu/kernels/paged_decode_attention.cu gpu/kernels/kv_cache_write.cu gpu/kernels/qk_norm_rope.cu \
//        gpu/ref/paged_decode_attention_ref.cpp \
//        -o build-gpu/bench_int8_kv            (or bash bench/gpu/build_torch_free.sh bench_int8_kv)
// First the checks (exit code 1 on a failure):
//   - the int8 write against a CPU quantization of the same float16 rows, byte for byte and scale for scale, at
//     37 tokens on shuffled slots with skipped ones (negative, past the pool), and untouched slots left alone;
//   - the rotation that writes the int8 cache against the float16 rotation followed by the int8 write;
//   - the same with V by dim (Cache::valuesByDim, the tensor-core kernel's layout), from the write and the rotation;
//   - the int8 attention against a float64 CPU reference over the same int8 cache (sequences of 1, 15, 16, 17,
//     200, 1076 and 1333 keys, a masked block, 1 to 5 partitions), with float and with integer (__dp2a) logits,
//     and on the tensor cores over the cache with V by dim (one and two blocks a warp in flight);
//   - the rotation inside the int8 attention against the rotation that writes the cache, then the attention;
//   - how far the int8 cache moves the attention from float16's (the same rows unquantized), for the record.
// Then the decode attention of HunyuanOCR's 16 query / 8 KV heads of 128 at 16 to 64 sequences of one context,
// 24 launches in a graph, each on its own layer's cache, as bench_decode_attention times them: float16's
// one-pass kernel at the graphs' row partitions against the int8 kernels at a few partition counts (float and
// integer logits, tensor cores with one and two blocks in flight), and the
// K/V write of a step's new tokens in both formats.
//   bench_int8_kv [--context N] [--batches 16,32,48,64]
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/gpu/cuda_bench.h"
#include "bench/gpu/kv_int8_prototype.cuh"
#include "gpu/kernels/kv_cache_write.cuh"
#include "gpu/kernels/paged_decode_attention.cuh"
#include "gpu/kernels/qk_norm_rope.cuh"
#include "gpu/ref/element_ref.h"
#include "gpu/ref/paged_decode_attention_ref.h"

namespace gpu = lector::gpu;
namespace bench = lector::bench;
namespace q8 = lector::bench::int8kv;

namespace {

using bench::check;
using Buffer = bench::DeviceBuffer;

constexpr int kQHeads = 16, kKvHeads = 8, kD = 128, kGraphContext = 8192, kLayers = 24;
constexpr int kTokenElems = kKvHeads * kD;
constexpr int kQkv = (kQHeads + 2 * kKvHeads) * kD;  // a row of the fused qkv output: q, k, v
constexpr int kMaxPos = 4096;                       // rows of the checks' rotation table

int numSms()
{
    int n = 0;
    check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, 0), "attribute");
    return n;
}

// --- CPU references ---

// The prototype's quantization of one row of kD float16 values (the kernel's float32 arithmetic, in the same
// order, so the bytes must match exactly).
void quantizeRowRef(const uint16_t* x, int8_t* q, float* scale)
{
    float amax = 0.0f;
    for (int d = 0; d < kD; ++d) amax = std::max(amax, std::fabs(gpu::ref::halfBitsToFloat(x[d])));
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (int d = 0; d < kD; ++d) {
        const float r = std::min(std::max(std::rint(gpu::ref::halfBitsToFloat(x[d]) * inv), -127.0f), 127.0f);
        q[d] = static_cast<int8_t>(r);
    }
    *scale = amax / 127.0f;
}

// An int8 cache on the host, [numBlocks, 16, Hk, D] and its scales [numBlocks, Hk, 16].
struct HostInt8 {
    std::vector<int8_t> k, v;
    std::vector<float> ks, vs;
};

HostInt8 quantizeCacheRef(const std::vector<uint16_t>& k, const std::vector<uint16_t>& v, int numBlocks)
{
    HostInt8 h;
    const size_t slots = size_t(numBlocks) * gpu::kKvBlockSize;
    h.k.resize(slots * kTokenElems);
    h.v.resize(slots * kTokenElems);
    h.ks.resize(slots * kKvHeads);
    h.vs.resize(slots * kKvHeads);
    for (size_t s = 0; s < slots; ++s)
        for (int hd = 0; hd < kKvHeads; ++hd) {
            const size_t row = (s * kKvHeads + hd) * kD;
            const int64_t si = q8::scaleIndex(int64_t(s), kKvHeads, hd);
            quantizeRowRef(k.data() + row, h.k.data() + row, &h.ks[size_t(si)]);
            quantizeRowRef(v.data() + row, h.v.data() + row, &h.vs[size_t(si)]);
        }
    return h;
}

// V of a token-major int8 cache (quantizeCacheRef's) as Cache::valuesByDim stores it.
std::vector<int8_t> valuesByDimRef(const std::vector<int8_t>& v)
{
    std::vector<int8_t> out(v.size());
    const int64_t slots = int64_t(v.size()) / kTokenElems;
    for (int64_t s = 0; s < slots; ++s)
        for (int hd = 0; hd < kKvHeads; ++hd)
            for (int d = 0; d < kD; ++d)
                out[size_t(q8::valueByDimIndex(s, kKvHeads, hd, d))] = q8::valueByDimByte(v[(size_t(s) * kKvHeads + hd) * kD + d]);
    return out;
}

// Decode attention over the int8 cache in float64: softmax(scale q . (ks k)) (vs v), as float16.
std::vector<uint16_t> attentionRef(const HostInt8& c, const std::vector<uint16_t>& query, const std::vector<int32_t>& table,
                                   int tableStride, const std::vector<int32_t>& lens, int numBlocks, float scale)
{
    const int numSeqs = int(lens.size()), G = kQHeads / kKvHeads;
    std::vector<uint16_t> out(size_t(numSeqs) * kQHeads * kD);
    for (int s = 0; s < numSeqs; ++s)
        for (int qh = 0; qh < kQHeads; ++qh) {
            const int hd = qh / G;
            const uint16_t* qv = query.data() + (size_t(s) * kQHeads + qh) * kD;
            std::vector<double> logit(size_t(std::max(lens[s], 0)), -INFINITY);
            double mx = -INFINITY;
            for (int t = 0; t < lens[s]; ++t) {
                const int32_t b = table[size_t(s) * tableStride + t / gpu::kKvBlockSize];
                if (b < 0 || b >= numBlocks) continue;
                const int64_t slot = int64_t(b) * gpu::kKvBlockSize + t % gpu::kKvBlockSize;
                const int8_t* kr = c.k.data() + (size_t(slot) * kKvHeads + hd) * kD;
                double dot = 0.0;
                for (int d = 0; d < kD; ++d) dot += double(gpu::ref::halfBitsToFloat(qv[d])) * kr[d];
                logit[size_t(t)] = dot * c.ks[size_t(q8::scaleIndex(slot, kKvHeads, hd))] * scale;
                mx = std::max(mx, logit[size_t(t)]);
            }
            std::vector<double> acc(kD, 0.0);
            double sum = 0.0;
            for (int t = 0; t < lens[s]; ++t) {
                if (logit[size_t(t)] == -INFINITY) continue;
                const int32_t b = table[size_t(s) * tableStride + t / gpu::kKvBlockSize];
                const int64_t slot = int64_t(b) * gpu::kKvBlockSize + t % gpu::kKvBlockSize;
                const double p = std::exp(logit[size_t(t)] - mx);
                const double w = p * c.vs[size_t(q8::scaleIndex(slot, kKvHeads, hd))];
                const int8_t* vr = c.v.data() + (size_t(slot) * kKvHeads + hd) * kD;
                sum += p;
                for (int d = 0; d < kD; ++d) acc[size_t(d)] += w * vr[d];
            }
            for (int d = 0; d < kD; ++d)
                out[(size_t(s) * kQHeads + qh) * kD + d] = gpu::ref::floatToHalfBits(sum > 0.0 ? float(acc[size_t(d)] / sum) : 0.0f);
        }
    return out;
}

// --- device caches ---

struct Int8Dev {
    std::unique_ptr<Buffer> k, v, ks, vs;
    int numBlocks = 0;
    bool valuesByDim = false;
    q8::Cache view() const
    {
        return {static_cast<int8_t*>(k->ptr), static_cast<int8_t*>(v->ptr), static_cast<float*>(ks->ptr),
                static_cast<float*>(vs->ptr), numBlocks, valuesByDim};
    }
};

Int8Dev allocInt8(int numBlocks, bool valuesByDim = false)
{
    const size_t slots = size_t(numBlocks) * gpu::kKvBlockSize;
    return {std::make_unique<Buffer>(slots * kTokenElems), std::make_unique<Buffer>(slots * kTokenElems),
            std::make_unique<Buffer>(slots * kKvHeads * 4), std::make_unique<Buffer>(slots * kKvHeads * 4), numBlocks,
            valuesByDim};
}

// Which int8 attention kernel: SIMT with float or integer (__dp2a) logits, or both products on the tensor cores
// (over a cache with V by dim) with one or two blocks a warp in flight.
enum class Kernel { Float, Dp2a, TensorCores, TensorCores2 };
constexpr Kernel kKernels[] = {Kernel::Float, Kernel::Dp2a, Kernel::TensorCores, Kernel::TensorCores2};
const char* kernelName(Kernel k)
{
    return k == Kernel::Float ? "" : k == Kernel::Dp2a ? ", integer logits" : k == Kernel::TensorCores ? ", tensor cores"
                                                                                                       : ", tensor cores x2";
}
bool byDim(Kernel k) { return k == Kernel::TensorCores || k == Kernel::TensorCores2; }

// The flags that pick kernel k.
void selectKernel(q8::AttentionParams& a, Kernel k)
{
    a.dp2aLogits = k == Kernel::Dp2a;
    a.tensorCores = byDim(k);
    a.blocksInFlight = k == Kernel::TensorCores2 ? 2 : 1;
}

// The int8 write of numTokens rows of K and V (tokenStride elements apart; 0: contiguous) to the slots in c.
q8::WriteParams writeParams(const Int8Dev& c, const void* key, const void* value, const void* slots, int numTokens,
                            int64_t tokenStride = 0)
{
    q8::WriteParams w;
    w.key = static_cast<const __half*>(key);
    w.value = static_cast<const __half*>(value);
    w.cache = c.view();
    w.slotMapping = static_cast<const int64_t*>(slots);
    w.keyTokenStride = w.valueTokenStride = tokenStride;
    w.numTokens = numTokens;
    w.numKvHeads = kKvHeads;
    return w;
}

// Every slot of a float16 cache through the int8 write (identity slots): the cache is [slots, Hk, D] rows.
void quantizeOnDevice(const void* k16, const void* v16, const Int8Dev& c, const Buffer& identity, cudaStream_t stream)
{
    check(q8::launchWrite(writeParams(c, k16, v16, identity.ptr, c.numBlocks * gpu::kKvBlockSize), stream), "int8 write");
}

// Decode attention of numSeqs query rows (queryStride elements apart; 0: contiguous) over c, at `parts` row
// partitions, the block table as wide as the graphs' (kGraphContext keys).
q8::AttentionParams attentionParams(const Int8Dev& c, const void* query, int64_t queryStride, void* out, const Buffer& table,
                                    const Buffer& lens, const Buffer& workspace, const Buffer& counters, int numSeqs, int parts)
{
    q8::AttentionParams a;
    a.out = static_cast<__half*>(out);
    a.query = static_cast<const __half*>(query);
    a.cache = c.view();
    a.blockTable = static_cast<const int32_t*>(table.ptr);
    a.contextLens = static_cast<const int32_t*>(lens.ptr);
    a.workspace = static_cast<float*>(workspace.ptr);
    a.counters = static_cast<int32_t*>(counters.ptr);
    a.blockTableStride = kGraphContext / gpu::kKvBlockSize;
    a.querySeqStride = queryStride;
    a.numSeqs = numSeqs;
    a.numQHeads = kQHeads;
    a.numKvHeads = kKvHeads;
    a.rowPartitions = parts;
    a.scale = 1.0f / std::sqrt(float(kD));
    return a;
}

// Float16 decode attention of numSeqs contiguous query rows over a float16 cache of numBlocks blocks, the block
// table as wide as the graphs' (the CPU reference's on host pointers, the kernel's on device ones).
gpu::PagedDecodeAttentionParams fp16AttentionParams(void* out, const void* query, const void* keys, const void* values,
                                                    const int32_t* table, const int32_t* lens, int numSeqs, int numBlocks)
{
    gpu::PagedDecodeAttentionParams p;
    p.dtype = gpu::DType::F16;
    p.out = out;
    p.query = query;
    p.keyCache = keys;
    p.valueCache = values;
    p.blockTable = table;
    p.contextLens = lens;
    p.querySeqStride = p.outSeqStride = int64_t(kQHeads) * kD;
    p.blockTableStride = kGraphContext / gpu::kKvBlockSize;
    p.numSeqs = numSeqs;
    p.numQHeads = kQHeads;
    p.numKvHeads = kKvHeads;
    p.headDim = kD;
    p.numBlocks = numBlocks;
    p.maxContextLen = kGraphContext;
    p.scale = 1.0f / std::sqrt(float(kD));
    return p;
}

// HunyuanOCR's QK-norm/XD-RoPE of `rows` rows of a fused qkv buffer (kQkv elements a row) at positions [4, rows],
// with its new tokens' slots; no cache pointers (the int8 kernels take theirs apart).
gpu::QkNormRopeParams ropeParams(void* qkv, int rows, const Buffer& positions, const Buffer& cosSin, const Buffer& queryNorm,
                                 const Buffer& keyNorm, const Buffer& slots)
{
    gpu::QkNormRopeParams r;
    r.query = qkv;
    r.key = static_cast<__half*>(qkv) + kQHeads * kD;
    r.value = static_cast<__half*>(qkv) + (kQHeads + kKvHeads) * kD;
    r.queryTokenStride = r.keyTokenStride = r.valueTokenStride = kQkv;
    r.positions = positions.ptr;
    r.positionsAxisStride = rows;
    r.cosSinCache = static_cast<const float*>(cosSin.ptr);
    r.queryNormWeight = queryNorm.ptr;
    r.keyNormWeight = keyNorm.ptr;
    r.numTokens = rows;
    r.numQHeads = kQHeads;
    r.numKvHeads = kKvHeads;
    r.headDim = kD;
    r.maxPosition = kMaxPos;
    r.numPosAxes = 4;
    for (int x = 0; x < 4; ++x) r.sections[x] = kD / 8;
    r.slotMapping = static_cast<const int64_t*>(slots.ptr);
    return r;
}

std::unique_ptr<Buffer> identitySlots(int numBlocks)
{
    std::vector<int64_t> ids(size_t(numBlocks) * gpu::kKvBlockSize);
    std::iota(ids.begin(), ids.end(), int64_t(0));
    return bench::upload(ids);
}

template <class T>
std::vector<T> download(const Buffer& b)
{
    std::vector<T> h(b.bytes / sizeof(T));
    check(cudaMemcpy(h.data(), b.ptr, b.bytes, cudaMemcpyDeviceToHost), "download");
    return h;
}

// Bytes of K, V and their scales where two int8 caches differ.
size_t differingBytes(const Int8Dev& a, const Int8Dev& b)
{
    size_t bad = 0;
    for (const auto& [x, y] : {std::pair{a.k.get(), b.k.get()}, {a.v.get(), b.v.get()}, {a.ks.get(), b.ks.get()}, {a.vs.get(), b.vs.get()}}) {
        const auto hx = download<uint8_t>(*x), hy = download<uint8_t>(*y);
        for (size_t i = 0; i < hx.size(); ++i) bad += hx[i] != hy[i];
    }
    return bad;
}

// Bytes of K, V and their scales where a device int8 cache differs from the expected host one.
size_t differingBytes(const Int8Dev& c, const HostInt8& want)
{
    size_t bad = 0;
    auto compare = [&](const Buffer& b, const void* host, size_t bytes) {
        const auto got = download<uint8_t>(b);
        const auto* h = static_cast<const uint8_t*>(host);
        if (got.size() != bytes) {
            bad += std::max(got.size(), bytes);  // a wrong size differs throughout
            return;
        }
        for (size_t i = 0; i < bytes; ++i) bad += got[i] != h[i];
    };
    compare(*c.k, want.k.data(), want.k.size());
    compare(*c.v, want.v.data(), want.v.size());
    compare(*c.ks, want.ks.data(), want.ks.size() * sizeof(float));
    compare(*c.vs, want.vs.data(), want.vs.size() * sizeof(float));
    return bad;
}

// The blocks sequences of these lengths take, and a block table as wide as the graphs' giving each its blocks from
// a shuffle of the pool's first ones (-1 past them).
int blocksFor(const std::vector<int32_t>& lens)
{
    int total = 0;
    for (int l : lens) total += (l + gpu::kKvBlockSize - 1) / gpu::kKvBlockSize;
    return total;
}

std::vector<int32_t> shuffledTable(const std::vector<int32_t>& lens, int numBlocks, uint32_t seed)
{
    const int width = kGraphContext / gpu::kKvBlockSize;
    std::vector<int32_t> ids(static_cast<size_t>(numBlocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(seed));
    std::vector<int32_t> table(lens.size() * width, -1);
    for (size_t s = 0, next = 0; s < lens.size(); ++s)
        for (int j = 0; j < (lens[s] + gpu::kKvBlockSize - 1) / gpu::kKvBlockSize; ++j) table[s * width + j] = ids[next++];
    return table;
}

// --- checks ---

// 37 tokens written to shuffled slots of an 11-block pool (3 skipped: -1, past the pool, -5), the rest of the
// cache keeping its fill; bytes and scales compared exactly with the CPU's quantization. V token-major or by dim.
bool checkWrite(bool byDim)
{
    constexpr int kTokens = 37, kBlocks = 11;
    const std::vector<uint16_t> k = bench::randomHalfBits(size_t(kTokens) * kTokenElems, 11);
    std::vector<uint16_t> v = bench::randomHalfBits(size_t(kTokens) * kTokenElems, 12);
    for (int d = 0; d < kD; ++d) v[size_t(5 * kKvHeads + 3) * kD + d] = 0;  // an all-zero row: scale 0
    std::vector<int64_t> slots(size_t(kBlocks) * gpu::kKvBlockSize);
    std::iota(slots.begin(), slots.end(), int64_t(0));
    std::shuffle(slots.begin(), slots.end(), std::mt19937(13));
    slots.resize(kTokens);
    slots[4] = -1;
    slots[20] = int64_t(kBlocks) * gpu::kKvBlockSize;
    slots[36] = -5;
    const Int8Dev c = allocInt8(kBlocks, byDim);
    for (const auto* b : {c.k.get(), c.v.get(), c.ks.get(), c.vs.get()}) check(cudaMemset(b->ptr, 0x5a, b->bytes), "memset");
    auto dk = bench::upload(k), dv = bench::upload(v), ds = bench::upload(slots);
    check(q8::launchWrite(writeParams(c, dk->ptr, dv->ptr, ds->ptr, kTokens), nullptr), "int8 write");
    check(cudaDeviceSynchronize(), "int8 write");
    // The expected cache: the fill, then each written token's rows.
    const size_t slotsAll = size_t(kBlocks) * gpu::kKvBlockSize;
    float fill;
    std::memset(&fill, 0x5a, 4);
    HostInt8 e{std::vector<int8_t>(slotsAll * kTokenElems, int8_t(0x5a)), std::vector<int8_t>(slotsAll * kTokenElems, int8_t(0x5a)),
               std::vector<float>(slotsAll * kKvHeads, fill), std::vector<float>(slotsAll * kKvHeads, fill)};
    for (int t = 0; t < kTokens; ++t) {
        const int64_t s = slots[size_t(t)];
        if (s < 0 || s >= int64_t(kBlocks) * gpu::kKvBlockSize) continue;
        for (int hd = 0; hd < kKvHeads; ++hd) {
            const size_t src = (size_t(t) * kKvHeads + hd) * kD, dst = (size_t(s) * kKvHeads + hd) * kD;
            const size_t si = size_t(q8::scaleIndex(s, kKvHeads, hd));
            quantizeRowRef(k.data() + src, e.k.data() + dst, &e.ks[si]);
            int8_t row[kD];
            quantizeRowRef(v.data() + src, row, &e.vs[si]);
            for (int d = 0; d < kD; ++d) {
                if (byDim) e.v[size_t(q8::valueByDimIndex(s, kKvHeads, hd, d))] = q8::valueByDimByte(row[d]);
                else e.v[dst + size_t(d)] = row[d];
            }
        }
    }
    const size_t bad = differingBytes(c, e);
    std::printf("| int8 write%s, 37 tokens, 3 skipped, a zero row | %zu differing bytes | %s |\n",
                byDim ? " (V by dim)" : "", bad, bad ? "MISMATCH" : "ok");
    return bad == 0;
}

// The rotation that writes the int8 cache (ropeWriteKernel) against the float16 rotation without a cache
// write followed by the int8 write: the same rotated q and k in place and the same cache bytes and scales, for
// 13 tokens at scattered positions on the 4 axes, one of them padding (slot -1). V token-major or by dim.
bool checkRopeWrite(bool byDim)
{
    constexpr int kTokens = 13, kBlocks = 5;
    const auto qkv = bench::randomHalfBits(size_t(kTokens) * kQkv, 31);
    std::vector<int64_t> positions(size_t(4) * kTokens), slots(kTokens);
    std::mt19937 rng(32);
    for (auto& x : positions) x = int64_t(rng() % kMaxPos);
    for (int t = 0; t < kTokens; ++t) slots[size_t(t)] = int64_t(t) * 5 + 3;
    slots[7] = -1;
    auto qkvA = bench::upload(qkv), qkvB = bench::upload(qkv), pos = bench::upload(positions), ds = bench::upload(slots);
    auto cs = bench::upload(bench::ropeTable(kMaxPos, kD));
    auto qn = bench::halves(kD, 33, 0.1f, 1.0f), kn = bench::halves(kD, 34, 0.1f, 1.0f);
    const Int8Dev a = allocInt8(kBlocks, byDim), b = allocInt8(kBlocks, byDim);
    for (const Int8Dev* c : {&a, &b})
        for (const auto* buf : {c->k.get(), c->v.get(), c->ks.get(), c->vs.get()}) check(cudaMemset(buf->ptr, 0, buf->bytes), "memset");
    auto rope = [&](void* qkvPtr) { return ropeParams(qkvPtr, kTokens, *pos, *cs, *qn, *kn, *ds); };
    check(gpu::launchQkNormRope(rope(qkvA->ptr), nullptr), "rope");  // no cache pointers: rotation only
    const __half* rotated = static_cast<const __half*>(qkvA->ptr);
    check(q8::launchWrite(writeParams(a, rotated + kQHeads * kD, rotated + (kQHeads + kKvHeads) * kD, ds->ptr, kTokens, kQkv),
                          nullptr),
          "int8 write");
    q8::RopeWriteParams f;
    f.rope = rope(qkvB->ptr);
    f.cache = b.view();
    check(q8::launchRopeWrite(f, nullptr), "rope + int8 write");
    check(cudaDeviceSynchronize(), "rope + int8 write");
    const auto ha = download<uint16_t>(*qkvA), hb = download<uint16_t>(*qkvB);
    size_t bad = differingBytes(a, b);
    for (size_t i = 0; i < ha.size(); ++i) bad += ha[i] != hb[i];
    // And something was written: the first token's K scale (slot 3) is positive.
    const auto scales = download<float>(*b.ks);
    const bool wrote = scales[size_t(q8::scaleIndex(3, kKvHeads, 0))] > 0.0f;
    std::printf("| rotation writing the int8 cache%s, 13 tokens, one padding | %zu differing bytes against the rotation, "
                "then the int8 write%s | %s |\n", byDim ? " (V by dim)" : "", bad, wrote ? "" : "; nothing written",
                bad == 0 && wrote ? "ok" : "MISMATCH");
    return bad == 0 && wrote;
}

// Sequences of 1, 15, 16, 17, 200, 1076 and 1333 keys on shuffled blocks (one block of the 1076 masked), at 1, 2,
// 3 and 5 partitions: each kernel against attentionRef over the same int8 cache (the tensor-core one over the
// cache with V by dim); and the int8 result against float16 attention over the unquantized rows.
bool checkAttention()
{
    const std::vector<int32_t> lens{1, 15, 16, 17, 200, 1076, 1333};
    const int numSeqs = int(lens.size()), width = kGraphContext / gpu::kKvBlockSize, numBlocks = blocksFor(lens) + 5;
    std::vector<int32_t> table = shuffledTable(lens, numBlocks, 21);
    table[size_t(5) * width + 30] = numBlocks + 7;  // a masked block in the 1076-key sequence
    const size_t cacheElems = size_t(numBlocks) * gpu::kKvBlockSize * kTokenElems;
    const auto hk = bench::randomHalfBits(cacheElems, 22), hv = bench::randomHalfBits(cacheElems, 23);
    const auto hq = bench::randomHalfBits(size_t(numSeqs) * kQHeads * kD, 24);
    const HostInt8 hc = quantizeCacheRef(hk, hv, numBlocks);
    const float scale = 1.0f / std::sqrt(float(kD));
    const auto want = attentionRef(hc, hq, table, width, lens, numBlocks, scale);

    auto dk = bench::upload(hk), dv = bench::upload(hv), dq = bench::upload(hq), dt = bench::upload(table);
    auto dl = bench::upload(lens);
    const Int8Dev c = allocInt8(numBlocks), cd = allocInt8(numBlocks, /*valuesByDim=*/true);
    const auto identity = identitySlots(numBlocks);
    quantizeOnDevice(dk->ptr, dv->ptr, c, *identity, nullptr);
    quantizeOnDevice(dk->ptr, dv->ptr, cd, *identity, nullptr);
    Buffer out(size_t(numSeqs) * kQHeads * kD * 2), ws(size_t(q8::workspaceFloats(numSeqs, kQHeads, 5)) * 4),
        counters(size_t(numSeqs) * kKvHeads * 4);
    check(cudaMemset(counters.ptr, 0, counters.bytes), "memset");
    bool ok = true;
    // The device quantization of the whole pool must equal the CPU's too (the attention reads it), in both layouts.
    for (const bool byDim : {false, true}) {
        const size_t bad = byDim ? differingBytes(cd, HostInt8{hc.k, valuesByDimRef(hc.v), hc.ks, hc.vs}) : differingBytes(c, hc);
        std::printf("| int8 write of a %d-block pool%s | %zu differing bytes | %s |\n", numBlocks, byDim ? " (V by dim)" : "",
                    bad, bad ? "MISMATCH" : "ok");
        ok = ok && bad == 0;
    }
    std::vector<uint16_t> fp16Want(want.size());
    gpu::ref::pagedDecodeAttentionRef(fp16AttentionParams(fp16Want.data(), hq.data(), hk.data(), hv.data(), table.data(),
                                                          lens.data(), numSeqs, numBlocks));
    for (Kernel kernel : kKernels)
        for (int parts : {1, 2, 3, 5}) {
            q8::AttentionParams a = attentionParams(byDim(kernel) ? cd : c, dq->ptr, 0, out.ptr, *dt, *dl, ws, counters,
                                                    numSeqs, parts);
            selectKernel(a, kernel);
            check(cudaMemset(out.ptr, 0xff, out.bytes), "memset");
            for (int rep = 0; rep < 2; ++rep) check(q8::launchAttention(a, nullptr), "int8 attention");  // tickets reset
            check(cudaDeviceSynchronize(), "int8 attention");
            const auto got = download<uint16_t>(out);
            const double nmse = bench::halfNmse(got, want), drift = bench::halfNmse(got, fp16Want);
            const auto cnt = download<int32_t>(counters);
            const bool countersZero = std::all_of(cnt.begin(), cnt.end(), [](int32_t x) { return x == 0; });
            const bool pass = nmse <= 1e-5 && countersZero;
            std::printf("| int8 attention, %d partitions%s | nmse %.2e against the int8 reference; %.2e against float16 "
                        "attention on the unquantized rows%s | %s |\n",
                        parts, kernelName(kernel), nmse, drift, countersZero ? "" : "; tickets not reset",
                        pass ? "ok" : "MISMATCH");
            ok = ok && pass;
        }
    return ok;
}

// The rotation inside the int8 attention (AttentionParams::rope) against the rotation that writes the int8 cache
// followed by the plain int8 attention, and against attentionRef over the cache and rotated queries that path
// leaves: the same cache bytes and scales, the same outputs. Seven sequences of 1 to 1333 keys at scattered
// positions, their new tokens in their last slots, 1, 2, 3 and 5 partitions.
bool checkRopeInside()
{
    const std::vector<int32_t> lens{1, 15, 16, 17, 200, 1076, 1333};
    const int numSeqs = int(lens.size()), width = kGraphContext / gpu::kKvBlockSize, numBlocks = blocksFor(lens) + 2;
    const std::vector<int32_t> table = shuffledTable(lens, numBlocks, 41);
    std::vector<int64_t> slots(static_cast<size_t>(numSeqs)), positions(size_t(4) * numSeqs);
    std::mt19937 rng(42);
    for (int s = 0; s < numSeqs; ++s) {
        const int t = lens[size_t(s)] - 1;
        slots[size_t(s)] = int64_t(table[size_t(s) * width + t / 16]) * 16 + t % 16;
        for (int a = 0; a < 4; ++a) positions[size_t(a) * numSeqs + s] = int64_t(rng() % kMaxPos);
    }
    const size_t cacheElems = size_t(numBlocks) * gpu::kKvBlockSize * kTokenElems;
    auto dk = bench::upload(bench::randomHalfBits(cacheElems, 43)), dv = bench::upload(bench::randomHalfBits(cacheElems, 44));
    const auto qkv = bench::randomHalfBits(size_t(numSeqs) * kQkv, 45);
    auto qkvA = bench::upload(qkv), qkvB = bench::upload(qkv), dt = bench::upload(table), dl = bench::upload(lens);
    auto ds = bench::upload(slots), pos = bench::upload(positions), cs = bench::upload(bench::ropeTable(kMaxPos, kD));
    auto qn = bench::halves(kD, 46, 0.1f, 1.0f), kn = bench::halves(kD, 47, 0.1f, 1.0f);
    const auto identity = identitySlots(numBlocks);
    const Int8Dev ca = allocInt8(numBlocks), cb = allocInt8(numBlocks);
    quantizeOnDevice(dk->ptr, dv->ptr, ca, *identity, nullptr);
    quantizeOnDevice(dk->ptr, dv->ptr, cb, *identity, nullptr);
    Buffer outA(size_t(numSeqs) * kQHeads * kD * 2), outB(outA.bytes), ws(size_t(q8::workspaceFloats(numSeqs, kQHeads, 5)) * 4),
        counters(size_t(numSeqs) * kKvHeads * 4);
    check(cudaMemset(counters.ptr, 0, counters.bytes), "memset");
    auto rope = [&](void* qkvPtr) { return ropeParams(qkvPtr, numSeqs, *pos, *cs, *qn, *kn, *ds); };
    auto attention = [&](const Int8Dev& c, void* qkvPtr, Buffer& out, int parts, bool inside) {
        q8::AttentionParams a = attentionParams(c, qkvPtr, kQkv, out.ptr, *dt, *dl, ws, counters, numSeqs, parts);
        if (inside) a.rope = rope(qkvPtr);
        check(q8::launchAttention(a, nullptr), inside ? "int8 attention, rotation inside" : "int8 attention");
    };
    // Path A once: the rotation writing the cache, in place in qkvA.
    q8::RopeWriteParams f;
    f.rope = rope(qkvA->ptr);
    f.cache = ca.view();
    check(q8::launchRopeWrite(f, nullptr), "rope + int8 write");
    check(cudaDeviceSynchronize(), "rope + int8 write");
    // The reference: attentionRef over path A's cache and rotated queries.
    HostInt8 h{download<int8_t>(*ca.k), download<int8_t>(*ca.v), download<float>(*ca.ks), download<float>(*ca.vs)};
    const auto rotated = download<uint16_t>(*qkvA);
    std::vector<uint16_t> query(size_t(numSeqs) * kQHeads * kD);
    for (int s = 0; s < numSeqs; ++s)
        std::copy_n(rotated.begin() + ptrdiff_t(size_t(s) * kQkv), kQHeads * kD, query.begin() + ptrdiff_t(size_t(s) * kQHeads * kD));
    const auto want = attentionRef(h, query, table, width, lens, numBlocks, 1.0f / std::sqrt(float(kD)));
    bool ok = true;
    for (int parts : {1, 2, 3, 5}) {
        check(cudaMemset(outA.ptr, 0xff, outA.bytes), "memset");
        check(cudaMemset(outB.ptr, 0xff, outB.bytes), "memset");
        attention(ca, qkvA->ptr, outA, parts, false);
        attention(cb, qkvB->ptr, outB, parts, true);  // qkvB stays raw: every launch rotates it again
        check(cudaDeviceSynchronize(), "int8 attention");
        const auto a = download<uint16_t>(outA), b = download<uint16_t>(outB);
        const size_t bad = differingBytes(ca, cb);
        const double vsPath = bench::halfNmse(b, a), vsRef = bench::halfNmse(b, want);
        const bool pass = bad == 0 && vsPath <= 1e-6 && vsRef <= 1e-5;
        std::printf("| int8 attention, rotation inside, %d partitions | %zu differing cache bytes; nmse %.2e against the "
                    "rotation then the attention, %.2e against the int8 reference | %s |\n",
                    parts, bad, vsPath, vsRef, pass ? "ok" : "MISMATCH");
        ok = ok && pass;
    }
    return ok;
}

// --- timing ---

struct Timing {
    int batch = 0, context = 0, blocksPerSeq = 0, numBlocks = 0;
    std::vector<std::unique_ptr<Buffer>> k16, v16;
    std::vector<Int8Dev> i8, i8ByDim;  // the same rows, V token-major and by dim
    std::unique_ptr<Buffer> query, out, table, lens, workspace, counters, newK, newV, slots;
};

Timing makeTiming(int batch, int context, cudaStream_t stream)
{
    Timing t;
    t.batch = batch;
    t.context = context;
    t.blocksPerSeq = (context + 15) / 16;
    t.numBlocks = batch * t.blocksPerSeq + 3;
    const size_t cacheElems = size_t(t.numBlocks) * gpu::kKvBlockSize * kTokenElems;
    const auto identity = identitySlots(t.numBlocks);
    for (int l = 0; l < kLayers; ++l) {
        t.k16.push_back(bench::halves(cacheElems, 100 + 2 * l, 2.0f));
        t.v16.push_back(bench::halves(cacheElems, 101 + 2 * l, 2.0f));
        t.i8.push_back(allocInt8(t.numBlocks));
        quantizeOnDevice(t.k16.back()->ptr, t.v16.back()->ptr, t.i8.back(), *identity, stream);
        t.i8ByDim.push_back(allocInt8(t.numBlocks, /*valuesByDim=*/true));
        quantizeOnDevice(t.k16.back()->ptr, t.v16.back()->ptr, t.i8ByDim.back(), *identity, stream);
    }
    const int width = kGraphContext / 16;
    std::vector<int32_t> ids(size_t(batch) * t.blocksPerSeq), table(size_t(batch) * width, 0);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(4));
    for (int b = 0; b < batch; ++b)
        for (int j = 0; j < t.blocksPerSeq; ++j) table[size_t(b) * width + j] = ids[size_t(b) * t.blocksPerSeq + j];
    t.table = bench::upload(table);
    t.lens = bench::upload(std::vector<int32_t>(size_t(batch), context));
    t.query = bench::halves(size_t(batch) * kQHeads * kD, 7, 1.0f);
    t.out = std::make_unique<Buffer>(size_t(batch) * kQHeads * kD * 2);
    t.workspace = std::make_unique<Buffer>(size_t(std::max(q8::workspaceFloats(batch, kQHeads, gpu::kDecodeMaxRowPartitions),
                                                           gpu::pagedAttentionWorkspaceFloats(batch, kQHeads, kD, gpu::kDecodeMaxRowPartitions))) * 4);
    t.counters = std::make_unique<Buffer>(size_t(batch) * kKvHeads * 4);
    check(cudaMemset(t.counters->ptr, 0, t.counters->bytes), "memset");
    // A decode step's new K/V: one token a sequence, written to its last slot.
    t.newK = bench::halves(size_t(batch) * kTokenElems, 8, 2.0f);
    t.newV = bench::halves(size_t(batch) * kTokenElems, 9, 2.0f);
    std::vector<int64_t> slots(static_cast<size_t>(batch));
    for (int b = 0; b < batch; ++b) slots[size_t(b)] = int64_t(table[size_t(b) * width + (context - 1) / 16]) * 16 + (context - 1) % 16;
    t.slots = bench::upload(slots);
    check(cudaStreamSynchronize(stream), "setup");
    return t;
}

double fp16Attention(cudaStream_t stream, const Timing& t, int rowParts)
{
    return bench::graphMicros(stream, kLayers, [&](int l) {
        gpu::PagedDecodeAttentionParams p =
            fp16AttentionParams(t.out->ptr, t.query->ptr, t.k16[size_t(l)]->ptr, t.v16[size_t(l)]->ptr,
                                static_cast<const int32_t*>(t.table->ptr), static_cast<const int32_t*>(t.lens->ptr), t.batch,
                                t.numBlocks);
        p.workspace = static_cast<float*>(t.workspace->ptr);
        p.counters = static_cast<int32_t*>(t.counters->ptr);
        p.rowPartitions = rowParts;
        return gpu::launchPagedDecodeAttention(p, stream) == cudaSuccess;
    });
}

double int8Attention(cudaStream_t stream, const Timing& t, int rowParts, Kernel kernel)
{
    return bench::graphMicros(stream, kLayers, [&](int l) {
        q8::AttentionParams a = attentionParams((byDim(kernel) ? t.i8ByDim : t.i8)[size_t(l)], t.query->ptr, 0, t.out->ptr,
                                                *t.table, *t.lens, *t.workspace, *t.counters, t.batch, rowParts);
        selectKernel(a, kernel);
        return q8::launchAttention(a, stream) == cudaSuccess;
    });
}

// The step's K/V write (one token a sequence) in each format, us a launch.
double writeMicros(cudaStream_t stream, const Timing& t, bool int8)
{
    return bench::graphMicros(stream, kLayers, [&](int l) {
        if (int8) {
            return q8::launchWrite(writeParams(t.i8[size_t(l)], t.newK->ptr, t.newV->ptr, t.slots->ptr, t.batch), stream) ==
                   cudaSuccess;
        }
        gpu::KvCacheWriteParams w;
        w.dtype = gpu::DType::F16;
        w.key = t.newK->ptr;
        w.value = t.newV->ptr;
        w.keyCache = t.k16[size_t(l)]->ptr;
        w.valueCache = t.v16[size_t(l)]->ptr;
        w.slotMapping = static_cast<const int64_t*>(t.slots->ptr);
        w.keyTokenStride = w.valueTokenStride = kTokenElems;
        w.keyHeadStride = w.valueHeadStride = kD;
        w.numTokens = t.batch;
        w.numKvHeads = kKvHeads;
        w.headDim = kD;
        w.numBlocks = t.numBlocks;
        return gpu::launchKvCacheWrite(w, stream) == cudaSuccess;
    });
}

}  // namespace

int main(int argc, char** argv)
{
    int context = 1076;
    std::vector<int> batches{16, 32, 48, 64};
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--context") && i + 1 < argc) context = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--batches") && i + 1 < argc) batches = bench::parseList(argv[++i]);
    }
    std::printf("# bench_int8_kv: an int8 KV cache (a scale per token and KV head) against float16, context %d, "
                "%d query / %d KV heads of %d\n\n## checks\n\n| what | result | ok |\n|---|---|---|\n",
                context, kQHeads, kKvHeads, kD);
    bool ok = true;
    for (bool byDim : {false, true}) {
        ok = checkWrite(byDim) && ok;
        ok = checkRopeWrite(byDim) && ok;
    }
    ok = checkAttention() && ok;
    ok = checkRopeInside() && ok;
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    const double bw = bench::copyBandwidth();
    std::printf("\n## decode attention, us a launch (%d launches in a graph, one layer's cache each, under PDL)\n\n"
                "copy bandwidth %.0f GB/s; bytes are K/V plus, for int8, their scales\n\n"
                "| sequences | float16, row partitions (graphs') | us | of copy bw | int8, row partitions | us | of copy bw "
                "| int8 / float16 | K/V write a layer, float16 / int8 us |\n|---|---|---|---|---|---|---|---|---|\n",
                kLayers, bw / 1e9);
    for (int b : batches) {
        const Timing t = makeTiming(b, context, stream);
        const int rp = gpu::pagedDecodeRowPartitions(b, kKvHeads, numSms());
        const double us16 = fp16Attention(stream, t, rp);
        const double bytes16 = 2.0 * b * context * kTokenElems * 2, bytes8 = 2.0 * b * context * (kTokenElems + 4 * kKvHeads);
        double best = INFINITY;
        size_t bestRow = 0;
        struct Row {
            int parts;
            Kernel kernel;
            double us;
        };
        std::vector<Row> rows;
        for (Kernel kernel : kKernels)
            for (int parts : {rp, 2 * rp, 3 * rp, 4 * rp}) {
                if (parts > gpu::kDecodeMaxRowPartitions || (kernel == Kernel::Dp2a && parts > 2 * rp)) continue;
                rows.push_back({parts, kernel, int8Attention(stream, t, parts, kernel)});
                if (rows.back().us < best) best = rows.back().us, bestRow = rows.size() - 1;
            }
        const double w16 = writeMicros(stream, t, false), w8 = writeMicros(stream, t, true);
        for (size_t i = 0; i < rows.size(); ++i)
            std::printf("| %d | %d | %.2f | %.0f %% | %d%s%s | %.2f | %.0f %% | %.3f | %.2f / %.2f |\n", b, rp, us16,
                        100.0 * bytes16 / bw * 1e6 / us16, rows[i].parts, kernelName(rows[i].kernel),
                        i == bestRow ? " (best)" : "", rows[i].us, 100.0 * bytes8 / bw * 1e6 / rows[i].us,
                        rows[i].us / us16, w16, w8);
    }
    std::printf("\n%s\n", ok ? "all checks passed" : "CHECK FAILED");
    return ok ? 0 : 1;
}
