// Tensor edge of gpu/: TORCH_CHECKs, Params from tensors, then the CUDA launcher or the CPU reference.
// No kernel code here. The CUDA path compiles against CPU-only libtorch too (Debian's 1.13): only the
// current-stream lookup needs c10_cuda, and without it no CUDA tensor can reach this file. Without
// LECTOR_CUDA (no kernels, no CUDA headers) the file still builds: every op runs its CPU reference, so
// the runner that drives these ops is testable on any machine.
#include "gpu/ops.h"

#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>

#include "gpu/ref/greedy_screen_ref.h"
#include "gpu/ref/kv_cache_write_ref.h"
#include "gpu/ref/paged_decode_attention_ref.h"
#include "gpu/ref/paged_prefill_attention_ref.h"
#include "gpu/ref/patchify_ref.h"
#include "gpu/ref/persistent_decode_ref.h"
#include "gpu/ref/qk_norm_rope_ref.h"
#include "gpu/ref/rms_norm_ref.h"
#include "gpu/ref/sample_tokens_ref.h"
#include "gpu/ref/silu_and_mul_ref.h"
#include "gpu/ref/skinny_gemm_ref.h"
#include "gpu/ref/vision_attention_ref.h"

#ifdef LECTOR_TORCH_HAS_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace lector::gpu {
namespace {

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
cudaStream_t currentStream(const at::Tensor& t)
{
#ifdef LECTOR_TORCH_HAS_CUDA
    return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
#else
    TORCH_CHECK(false, "lector_gpu: libtorch was built without CUDA, so ", t.device(), " tensors cannot be used");
    return nullptr;
#endif
}
#endif

DType dtypeOf(const at::Tensor& t, const char* op, const char* name)
{
    switch (t.scalar_type()) {
    case at::kFloat: return DType::F32;
    case at::kHalf: return DType::F16;
    case at::kBFloat16: return DType::BF16;
    default: break;
    }
    TORCH_CHECK(false, op, ": ", name, " has dtype ", t.scalar_type(), "; supported: float32, float16, bfloat16");
    return DType::F32;
}

void checkLike(const at::Tensor& t, const at::Tensor& anchor, const char* op, const char* name)
{
    TORCH_CHECK(t.defined(), op, ": ", name, " is undefined");
    TORCH_CHECK(t.device() == anchor.device(), op, ": ", name, " is on ", t.device(), ", expected ", anchor.device());
    TORCH_CHECK(t.scalar_type() == anchor.scalar_type(), op, ": ", name, " has dtype ", t.scalar_type(),
                ", expected ", anchor.scalar_type());
}

// An index/parameter tensor: given dtype, 1-D or 2-D as stated, on the anchor's device, contiguous.
void checkAux(const at::Tensor& t, const at::Tensor& anchor, at::ScalarType type, int64_t dims, const char* op,
              const char* name)
{
    TORCH_CHECK(t.defined(), op, ": ", name, " is undefined");
    TORCH_CHECK(t.device() == anchor.device(), op, ": ", name, " is on ", t.device(), ", expected ", anchor.device());
    TORCH_CHECK(t.scalar_type() == type, op, ": ", name, " has dtype ", t.scalar_type(), ", expected ", type);
    TORCH_CHECK(t.dim() == dims, op, ": ", name, " must have ", dims, " dims, got ", t.sizes());
    TORCH_CHECK(t.is_contiguous(), op, ": ", name, " must be contiguous");
}

// [numBlocks, kKvBlockSize, numKvHeads, headDim], contiguous; both caches alike.
void checkCaches(const at::Tensor& keyCache, const at::Tensor& valueCache, const char* op)
{
    TORCH_CHECK(keyCache.dim() == 4 && keyCache.size(1) == kKvBlockSize, op,
                ": keyCache must be [numBlocks, ", kKvBlockSize, ", numKvHeads, headDim], got ", keyCache.sizes());
    TORCH_CHECK(keyCache.is_contiguous() && valueCache.is_contiguous(), op, ": KV caches must be contiguous");
    TORCH_CHECK(valueCache.sizes() == keyCache.sizes(), op, ": valueCache is ", valueCache.sizes(), ", keyCache is ",
                keyCache.sizes());
    checkLike(valueCache, keyCache, op, "valueCache");
    dtypeOf(keyCache, op, "keyCache");
}

// [rows, heads, headDim] with contiguous heads (head stride headDim, innermost stride 1).
void checkHeads(const at::Tensor& t, int64_t rows, int64_t heads, int64_t headDim, const char* op, const char* name)
{
    TORCH_CHECK(t.dim() == 3 && t.size(0) == rows && t.size(1) == heads && t.size(2) == headDim, op, ": ", name,
                " must be [", rows, ", ", heads, ", ", headDim, "], got ", t.sizes());
    TORCH_CHECK(t.stride(2) == 1 && (heads == 1 || t.stride(1) == headDim), op, ": ", name,
                " needs contiguous heads (strides [*, ", headDim, ", 1]), got ", t.strides());
}

void checkCudaAttention(const at::Tensor& anchor, int64_t headDim, int64_t groupSize, const char* op)
{
    if (!anchor.is_cuda()) return;  // the reference takes any head dim and group size
    TORCH_CHECK(headDim == 128, op, ": head dim ", headDim, " has no CUDA kernel; supported: 128");
    TORCH_CHECK(groupSize == 1 || groupSize == 2 || groupSize == 4 || groupSize == 8, op, ": ", groupSize,
                " query heads per KV head has no CUDA kernel; supported: 1, 2, 4, 8");
}

int toInt(int64_t v, const char* op, const char* name)
{
    TORCH_CHECK(v >= 0 && v <= std::numeric_limits<int32_t>::max(), op, ": ", name, " = ", v, " is out of range");
    return static_cast<int>(v);
}

// CUDA launch on the tensors' current stream, or the reference on CPU. LECTOR_LAUNCHER(f) is the
// launcher where kernels are built in and nullptr elsewhere.
#ifdef LECTOR_GPU_HAVE_LAUNCHERS
#define LECTOR_LAUNCHER(f) (&f)
#else
#define LECTOR_LAUNCHER(f) nullptr
#endif
template <class Params, class Launch>
void dispatch(const at::Tensor& anchor, const char* op, const Params& p, Launch launch,
              void (*reference)(const Params&))
{
    if (anchor.is_cuda()) {
#ifdef LECTOR_GPU_HAVE_LAUNCHERS
        const c10::DeviceGuard guard(anchor.device());
        const cudaError_t err = launch(p, currentStream(anchor));
        TORCH_CHECK(err == cudaSuccess, op, ": CUDA launch failed: ", cudaGetErrorString(err));
#else
        (void)launch;
        TORCH_CHECK(false, op, ": this build has no CUDA kernels (configure with -DLECTOR_CUDA=ON)");
#endif
        return;
    }
    TORCH_CHECK(anchor.is_cpu(), op, ": tensors must be on CUDA or CPU, got ", anchor.device());
    reference(p);
}

// Split-K tickets of the attention kernels (SimtArgs::counters) on the anchor's CUDA device: zeroed
// once, and every launch leaves them at zero, so a CUDA-graph replay needs no memset. A buffer only
// grows, outside graph capture (the runner runs each graph's step once before capturing it), and old
// buffers stay alive: a captured graph keeps the pointer it was captured with. nullptr on CPU.
int32_t* splitCounters(const at::Tensor& anchor, int64_t count, const char* op)
{
#ifdef LECTOR_GPU_HAVE_LAUNCHERS
    if (!anchor.is_cuda()) return nullptr;
    static std::mutex mutex;
    static std::map<int, std::vector<at::Tensor>> buffers;  // device index -> buffers, newest last
    const std::lock_guard lock(mutex);
    std::vector<at::Tensor>& list = buffers[anchor.device().index()];
    if (list.empty() || list.back().numel() < count) {
        cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
        TORCH_CHECK(cudaStreamIsCapturing(currentStream(anchor), &status) == cudaSuccess &&
                        status == cudaStreamCaptureStatusNone,
                    op, ": split-K counters for ", count, " rows x KV heads must be allocated before graph capture");
        list.push_back(at::zeros({std::max<int64_t>(count, int64_t(1) << 16)}, anchor.options().dtype(at::kInt)));
    }
    return list.back().data_ptr<int32_t>();
#else
    (void)anchor, (void)count, (void)op;
    return nullptr;
#endif
}

}  // namespace

// --- KV cache ---

void writeKvCache(const at::Tensor& keyCache, const at::Tensor& valueCache, const at::Tensor& key,
                  const at::Tensor& value, const at::Tensor& slotMapping)
{
    const char* op = "writeKvCache";
    checkCaches(keyCache, valueCache, op);
    checkLike(key, keyCache, op, "key");
    checkLike(value, keyCache, op, "value");
    const int64_t numTokens = key.size(0), numKvHeads = keyCache.size(2), headDim = keyCache.size(3);
    TORCH_CHECK(key.dim() == 3 && key.size(1) == numKvHeads && key.size(2) == headDim && key.stride(2) == 1, op,
                ": key must be [numTokens, ", numKvHeads, ", ", headDim, "] with contiguous rows, got ", key.sizes());
    TORCH_CHECK(value.sizes() == key.sizes() && value.stride(2) == 1, op, ": value is ", value.sizes(), ", key is ",
                key.sizes());
    checkAux(slotMapping, keyCache, at::kLong, 1, op, "slotMapping");
    TORCH_CHECK(slotMapping.size(0) == numTokens, op, ": slotMapping has ", slotMapping.size(0), " slots for ",
                numTokens, " tokens");
    KvCacheWriteParams p;
    p.dtype = dtypeOf(keyCache, op, "keyCache");
    p.key = key.data_ptr();
    p.value = value.data_ptr();
    p.keyCache = keyCache.data_ptr();
    p.valueCache = valueCache.data_ptr();
    p.slotMapping = slotMapping.data_ptr<int64_t>();
    p.keyTokenStride = key.stride(0);
    p.keyHeadStride = key.stride(1);
    p.valueTokenStride = value.stride(0);
    p.valueHeadStride = value.stride(1);
    p.numTokens = toInt(numTokens, op, "numTokens");
    p.numKvHeads = toInt(numKvHeads, op, "numKvHeads");
    p.headDim = toInt(headDim, op, "headDim");
    p.numBlocks = toInt(keyCache.size(0), op, "numBlocks");
    dispatch(keyCache, op, p, LECTOR_LAUNCHER(launchKvCacheWrite), &ref::kvCacheWriteRef);
}

// --- attention ---

namespace {

int multiProcessors(const c10::Device& device, const char* op)
{
    int numSms = 132;  // H100/H200; only the CPU path lands here without a device query
#ifdef LECTOR_GPU_HAVE_LAUNCHERS
    if (device.is_cuda()) {
        const int index = device.has_index() ? device.index() : 0;
        TORCH_CHECK(cudaDeviceGetAttribute(&numSms, cudaDevAttrMultiProcessorCount, index) == cudaSuccess, op,
                    ": cannot query ", device);
    }
#else
    (void)device, (void)op;
#endif
    return numSms;
}

}  // namespace

int64_t pagedDecodeRowPartitions(int64_t numRows, int64_t numKvHeads, const c10::Device& device)
{
    return pagedDecodeRowPartitions(static_cast<int>(std::min<int64_t>(numRows, 1 << 30)),
                                    static_cast<int>(std::min<int64_t>(numKvHeads, 1 << 30)),
                                    multiProcessors(device, "pagedDecodeRowPartitions"));
}

int64_t pagedDecodeAutoRowPartitions(int64_t numRows, int64_t numKvHeads, const c10::Device& device)
{
    return pagedDecodeAutoRowPartitions(static_cast<int>(std::min<int64_t>(numRows, 1 << 30)),
                                        static_cast<int>(std::min<int64_t>(numKvHeads, 1 << 30)),
                                        multiProcessors(device, "pagedDecodeAutoRowPartitions"));
}

int64_t pagedAttentionPartitionSize(int64_t numRows, int64_t numKvHeads, int64_t maxContextLen,
                                    const c10::Device& device)
{
    const int numSms = multiProcessors(device, "pagedAttentionPartitionSize");
    return choosePagedDecodePartitionSize(static_cast<int>(std::min<int64_t>(numRows, 1 << 30)),
                                          static_cast<int>(numKvHeads),
                                          static_cast<int>(std::min<int64_t>(maxContextLen, 1 << 30)), numSms);
}

int64_t pagedDecodeClusterPartitions(const at::Tensor& keyCache, int64_t numQHeads, int64_t maxContextLen,
                                     int64_t wanted)
{
#ifdef LECTOR_GPU_HAVE_LAUNCHERS
    if (!keyCache.is_cuda() || keyCache.dim() != 4 || keyCache.size(2) <= 0) return 0;
    const c10::DeviceGuard guard(keyCache.device());
    const DType dtype = dtypeOf(keyCache, "pagedDecodeClusterPartitions", "keyCache");
    const int groupSize = static_cast<int>(numQHeads / keyCache.size(2));
    for (int64_t parts = std::min<int64_t>(wanted, kDecodeMaxClusterPartitions); parts >= 2; parts /= 2)
        if (pagedDecodeClusterPartitionLen(static_cast<int>(maxContextLen), static_cast<int>(parts)) <=
                kDecodeMaxPartition &&
            pagedDecodeClusterFits(dtype, static_cast<int>(parts), groupSize, static_cast<int>(keyCache.size(3)),
                                   static_cast<int>(maxContextLen)))
            return parts;
#else
    (void)keyCache, (void)numQHeads, (void)maxContextLen, (void)wanted;
#endif
    return 0;
}

namespace {

// pagedDecodeAttention's checks and Params; `workspace` keeps the split-K partials alive for the launch.
PagedDecodeAttentionParams decodeAttentionParams(const at::Tensor& out, const at::Tensor& query,
                                                 const at::Tensor& keyCache, const at::Tensor& valueCache,
                                                 const at::Tensor& blockTable, const at::Tensor& contextLens,
                                                 int64_t maxContextLen, double scale, int64_t partitionSize,
                                                 int64_t clusterPartitions, int64_t rowPartitions, at::Tensor& workspace,
                                                 const char* op)
{
    checkCaches(keyCache, valueCache, op);
    checkLike(query, keyCache, op, "query");
    checkLike(out, keyCache, op, "out");
    const int64_t numSeqs = query.size(0), numQHeads = query.dim() == 3 ? query.size(1) : 0;
    const int64_t numKvHeads = keyCache.size(2), headDim = keyCache.size(3);
    checkHeads(query, numSeqs, numQHeads, headDim, op, "query");
    checkHeads(out, numSeqs, numQHeads, headDim, op, "out");
    TORCH_CHECK(numQHeads > 0 && numQHeads % numKvHeads == 0, op, ": ", numQHeads,
                " query heads are not a multiple of ", numKvHeads, " KV heads");
    checkCudaAttention(query, headDim, numQHeads / numKvHeads, op);
    checkAux(blockTable, keyCache, at::kInt, 2, op, "blockTable");
    checkAux(contextLens, keyCache, at::kInt, 1, op, "contextLens");
    TORCH_CHECK(blockTable.size(0) == numSeqs && contextLens.size(0) == numSeqs, op, ": blockTable ",
                blockTable.sizes(), " and contextLens ", contextLens.sizes(), " must have ", numSeqs, " rows");
    TORCH_CHECK(maxContextLen >= 0 && maxContextLen <= blockTable.size(1) * kKvBlockSize, op, ": maxContextLen ",
                maxContextLen, " exceeds the block table's ", blockTable.size(1), " blocks");
    PagedDecodeAttentionParams p;
    p.dtype = dtypeOf(keyCache, op, "keyCache");
    p.out = out.data_ptr();
    p.query = query.data_ptr();
    p.keyCache = keyCache.data_ptr();
    p.valueCache = valueCache.data_ptr();
    p.blockTable = blockTable.data_ptr<int32_t>();
    p.contextLens = contextLens.data_ptr<int32_t>();
    p.querySeqStride = query.stride(0);
    p.outSeqStride = out.stride(0);
    p.blockTableStride = blockTable.stride(0);
    p.numSeqs = toInt(numSeqs, op, "numSeqs");
    p.numQHeads = toInt(numQHeads, op, "numQHeads");
    p.numKvHeads = toInt(numKvHeads, op, "numKvHeads");
    p.headDim = toInt(headDim, op, "headDim");
    p.numBlocks = toInt(keyCache.size(0), op, "numBlocks");
    p.maxContextLen = toInt(maxContextLen, op, "maxContextLen");
    TORCH_CHECK(rowPartitions >= 0 && rowPartitions <= kDecodeMaxRowPartitions && !(rowPartitions > 0 && clusterPartitions > 0),
                op, ": rowPartitions ", rowPartitions, " must be 0..", kDecodeMaxRowPartitions, ", without clusterPartitions");
    if (partitionSize < 0 && clusterPartitions <= 0 && rowPartitions == 0)
        rowPartitions = pagedDecodeAutoRowPartitions(numSeqs, numKvHeads, query.device());
    if (rowPartitions > 0) {
        p.rowPartitions = int(rowPartitions);
    } else if (clusterPartitions > 0) {
        TORCH_CHECK(clusterPartitions >= 2 && clusterPartitions <= kDecodeMaxClusterPartitions, op,
                    ": clusterPartitions ", clusterPartitions, " must be 2..", kDecodeMaxClusterPartitions);
        TORCH_CHECK(pagedDecodeClusterPartitionLen(p.maxContextLen, int(clusterPartitions)) <= kDecodeMaxPartition, op,
                    ": maxContextLen ", maxContextLen, " is too long for ", clusterPartitions, " partitions");
        p.clusterPartitions = int(clusterPartitions);
    } else {
        p.partitionSize = toInt(partitionSize >= 0 ? partitionSize
                                                   : pagedAttentionPartitionSize(numSeqs, numKvHeads, maxContextLen,
                                                                                 query.device()),
                                op, "partitionSize");
        TORCH_CHECK(p.partitionSize >= 0 && p.partitionSize % kKvBlockSize == 0, op, ": partitionSize ",
                    p.partitionSize, " must be a multiple of ", kKvBlockSize);
    }
    p.scale = static_cast<float>(scale);
    if (const int64_t floats = pagedDecodeWorkspaceFloats(p); floats > 0 && query.is_cuda()) {
        workspace = at::empty({floats}, query.options().dtype(at::kFloat));
        p.workspace = workspace.data_ptr<float>();
        p.counters = splitCounters(query, numSeqs * numKvHeads, op);
    }
    return p;
}

}  // namespace

void pagedDecodeAttention(const at::Tensor& out, const at::Tensor& query, const at::Tensor& keyCache,
                          const at::Tensor& valueCache, const at::Tensor& blockTable,
                          const at::Tensor& contextLens, int64_t maxContextLen, double scale, int64_t partitionSize,
                          int64_t clusterPartitions, int64_t rowPartitions)
{
    const char* op = "pagedDecodeAttention";
    at::Tensor workspace;
    const PagedDecodeAttentionParams p =
        decodeAttentionParams(out, query, keyCache, valueCache, blockTable, contextLens, maxContextLen, scale,
                              partitionSize, clusterPartitions, rowPartitions, workspace, op);
    dispatch(query, op, p, LECTOR_LAUNCHER(launchPagedDecodeAttention), &ref::pagedDecodeAttentionRef);
}

void pagedPrefillAttention(const at::Tensor& out, const at::Tensor& query, const at::Tensor& keyCache,
                           const at::Tensor& valueCache, const at::Tensor& blockTable,
                           const at::Tensor& cuSeqlensQ, const at::Tensor& contextLens, int64_t maxQueryLen,
                           int64_t maxContextLen, double scale, PrefillImpl impl)
{
    const char* op = "pagedPrefillAttention";
    checkCaches(keyCache, valueCache, op);
    checkLike(query, keyCache, op, "query");
    checkLike(out, keyCache, op, "out");
    const int64_t numTokens = query.size(0), numQHeads = query.dim() == 3 ? query.size(1) : 0;
    const int64_t numKvHeads = keyCache.size(2), headDim = keyCache.size(3);
    checkHeads(query, numTokens, numQHeads, headDim, op, "query");
    checkHeads(out, numTokens, numQHeads, headDim, op, "out");
    TORCH_CHECK(numQHeads > 0 && numQHeads % numKvHeads == 0, op, ": ", numQHeads,
                " query heads are not a multiple of ", numKvHeads, " KV heads");
    checkCudaAttention(query, headDim, numQHeads / numKvHeads, op);
    checkAux(blockTable, keyCache, at::kInt, 2, op, "blockTable");
    checkAux(cuSeqlensQ, keyCache, at::kInt, 1, op, "cuSeqlensQ");
    checkAux(contextLens, keyCache, at::kInt, 1, op, "contextLens");
    const int64_t numSeqs = contextLens.size(0);
    TORCH_CHECK(cuSeqlensQ.size(0) == numSeqs + 1 && blockTable.size(0) == numSeqs, op, ": cuSeqlensQ ",
                cuSeqlensQ.sizes(), " and blockTable ", blockTable.sizes(), " must match ", numSeqs, " sequences");
    TORCH_CHECK(maxContextLen >= 0 && maxContextLen <= blockTable.size(1) * kKvBlockSize, op, ": maxContextLen ",
                maxContextLen, " exceeds the block table's ", blockTable.size(1), " blocks");
    TORCH_CHECK(!prefillForcesTensorCores(impl) || query.scalar_type() != at::kFloat, op,
                ": the tensor-core path takes float16 or bfloat16, not float32");
    PagedPrefillAttentionParams p;
    p.dtype = dtypeOf(keyCache, op, "keyCache");
    p.impl = impl;
    p.out = out.data_ptr();
    p.query = query.data_ptr();
    p.keyCache = keyCache.data_ptr();
    p.valueCache = valueCache.data_ptr();
    p.blockTable = blockTable.data_ptr<int32_t>();
    p.cuSeqlensQ = cuSeqlensQ.data_ptr<int32_t>();
    p.contextLens = contextLens.data_ptr<int32_t>();
    p.queryTokenStride = query.stride(0);
    p.outTokenStride = out.stride(0);
    p.blockTableStride = blockTable.stride(0);
    p.numTokens = toInt(numTokens, op, "numTokens");
    p.numSeqs = toInt(numSeqs, op, "numSeqs");
    p.numQHeads = toInt(numQHeads, op, "numQHeads");
    p.numKvHeads = toInt(numKvHeads, op, "numKvHeads");
    p.headDim = toInt(headDim, op, "headDim");
    p.numBlocks = toInt(keyCache.size(0), op, "numBlocks");
    p.maxQueryLen = toInt(maxQueryLen, op, "maxQueryLen");
    p.maxContextLen = toInt(maxContextLen, op, "maxContextLen");
    p.scale = static_cast<float>(scale);
    at::Tensor workspace;
    if (query.is_cuda() && !prefillUsesTensorCores(p)) {
        p.partitionSize = toInt(pagedAttentionPartitionSize(numTokens, numKvHeads, maxContextLen, query.device()), op,
                                "partitionSize");
        if (const int64_t floats = pagedPrefillWorkspaceFloats(p); floats > 0) {
            workspace = at::empty({floats}, query.options().dtype(at::kFloat));
            p.workspace = workspace.data_ptr<float>();
            p.counters = splitCounters(query, numTokens * numKvHeads, op);
        }
    }
    dispatch(query, op, p, LECTOR_LAUNCHER(launchPagedPrefillAttention), &ref::pagedPrefillAttentionRef);
}

bool visionAttentionAvailable(const at::Tensor& qkv, int64_t headDim)
{
#ifdef LECTOR_GPU_HAVE_LAUNCHERS
    return qkv.is_cuda() && headDim == kVisionAttentionHeadDim &&
           (qkv.scalar_type() == at::kHalf || qkv.scalar_type() == at::kBFloat16) &&
           visionAttentionSupported(qkv.device().has_index() ? qkv.device().index() : 0);
#else
    (void)qkv, (void)headDim;
    return false;
#endif
}

void visionAttention(const at::Tensor& out, const at::Tensor& qkv, const at::Tensor& cuSeqlens, int64_t maxSeqlen,
                     int64_t numHeads, double scale, int shape)
{
    const char* op = "visionAttention";
    checkLike(out, qkv, op, "out");
    TORCH_CHECK(qkv.dim() == 2 && out.dim() == 2 && qkv.size(0) == out.size(0) && numHeads > 0 &&
                    qkv.size(1) == 3 * out.size(1) && out.size(1) % numHeads == 0,
                op, ": need qkv [rows, 3 * heads * headDim] and out [rows, heads * headDim] for ", numHeads,
                " heads, got ", qkv.sizes(), " and ", out.sizes());
    TORCH_CHECK(qkv.stride(1) == 1 && out.stride(1) == 1, op, ": rows of qkv and out must be contiguous");
    const int64_t headDim = out.size(1) / numHeads;
    if (qkv.is_cuda())
        TORCH_CHECK(visionAttentionAvailable(qkv, headDim), op, ": no CUDA kernel for head dim ", headDim, ", ",
                    qkv.scalar_type(), " on ", qkv.device(), "; supported: head dim ", kVisionAttentionHeadDim,
                    ", float16 or bfloat16, compute capability 9.0");
    checkAux(cuSeqlens, qkv, at::kInt, 1, op, "cuSeqlens");
    TORCH_CHECK(cuSeqlens.size(0) >= 1, op, ": cuSeqlens needs numImages + 1 entries");
    VisionAttentionParams p;
    p.dtype = dtypeOf(qkv, op, "qkv");
    p.qkv = qkv.data_ptr();
    p.out = out.data_ptr();
    p.cuSeqlens = cuSeqlens.data_ptr<int32_t>();
    p.qkvRowStride = qkv.stride(0);
    p.outRowStride = out.stride(0);
    p.numRows = toInt(qkv.size(0), op, "numRows");
    p.numImages = toInt(cuSeqlens.size(0) - 1, op, "numImages");
    p.maxSeqlen = toInt(maxSeqlen, op, "maxSeqlen");
    p.numHeads = toInt(numHeads, op, "numHeads");
    p.headDim = toInt(headDim, op, "headDim");
    p.scale = static_cast<float>(scale);
    p.shape = shape;
    dispatch(qkv, op, p, LECTOR_LAUNCHER(launchVisionAttention), &ref::visionAttentionRef);
}

bool kernelsBuiltIn()
{
#ifdef LECTOR_GPU_HAVE_LAUNCHERS
    return true;
#else
    return false;
#endif
}

// --- the vision tower's input ---

void patchify(const at::Tensor& out, const at::Tensor& rgb, int64_t patch, const std::array<float, 3>& mean,
              const std::array<float, 3>& std)
{
    const char* op = "patchify";
    TORCH_CHECK(rgb.defined() && out.defined() && rgb.device() == out.device(), op,
                ": rgb and out must be defined and on one device");
    TORCH_CHECK(rgb.scalar_type() == at::kByte && rgb.dim() == 3 && rgb.size(2) == 3 && rgb.is_contiguous(), op,
                ": rgb must be [height, width, 3] uint8, contiguous, got ", rgb.sizes(), " ", rgb.scalar_type());
    TORCH_CHECK(patch > 0 && rgb.size(0) % patch == 0 && rgb.size(1) % patch == 0, op, ": image ", rgb.size(1), "x",
                rgb.size(0), " is not a multiple of the patch size ", patch);
    const int64_t gridH = rgb.size(0) / patch, gridW = rgb.size(1) / patch;
    TORCH_CHECK(out.dim() == 2 && out.size(0) == gridH * gridW && out.size(1) == 3 * patch * patch &&
                    out.is_contiguous(),
                op, ": out must be [", gridH * gridW, ", ", 3 * patch * patch, "], contiguous, got ", out.sizes());
    PatchifyParams p;
    p.dtype = dtypeOf(out, op, "out");
    p.out = out.data_ptr();
    p.rgb = rgb.data_ptr<uint8_t>();
    p.gridH = toInt(gridH, op, "gridH");
    p.gridW = toInt(gridW, op, "gridW");
    p.patch = toInt(patch, op, "patch");
    for (size_t c = 0; c < 3; ++c) {
        TORCH_CHECK(std[c] != 0.0f, op, ": std of channel ", c, " is 0");
        p.mean[c] = mean[c];
        p.std[c] = std[c];
    }
    dispatch(out, op, p, LECTOR_LAUNCHER(launchPatchify), &ref::patchifyRef);
}

// --- projections at decode batch sizes ---

namespace {

// Checks and Params shared by the skinny GEMM entry points: x [rows <= skinnyMaxRows(engine), *] with
// contiguous rows, weight [n, k], out [rows, n], one dtype.
SkinnyGemmParams skinnyParams(const at::Tensor& out, const at::Tensor& x, const at::Tensor& weight, int64_t k,
                              SkinnyEngine engine, const char* op)
{
    const int maxRows = skinnyMaxRows(engine);
    const DType dtype = dtypeOf(x, op, "x");
    checkLike(weight, x, op, "weight");
    TORCH_CHECK(out.defined() && out.device() == x.device() &&
                    (out.scalar_type() == x.scalar_type() || out.scalar_type() == at::kFloat),
                op, ": out must be on ", x.device(), " in ", x.scalar_type(), " or float32");
    TORCH_CHECK(x.dim() == 2 && x.size(0) <= maxRows && x.stride(1) == 1, op, ": x must be [rows <= ", maxRows,
                ", k] with contiguous rows, got ", x.sizes());
    TORCH_CHECK(weight.dim() == 2 && weight.size(1) == k && weight.stride(1) == 1, op, ": weight must be [n, ", k,
                "] with contiguous rows, got ", weight.sizes());
    TORCH_CHECK(out.dim() == 2 && out.size(0) == x.size(0) && out.size(1) == weight.size(0) && out.stride(1) == 1,
                op, ": out must be [", x.size(0), ", ", weight.size(0), "], got ", out.sizes());
    SkinnyGemmParams p;
    p.dtype = dtype;
    p.engine = engine;
    p.out = out.data_ptr();
    p.x = x.data_ptr();
    p.weight = weight.data_ptr();
    p.outStride = out.stride(0);
    p.xStride = x.stride(0);
    p.weightStride = weight.stride(0);
    p.rows = toInt(x.size(0), op, "rows");
    p.n = toInt(weight.size(0), op, "n");
    p.k = toInt(k, op, "k");
    p.outFloat = out.scalar_type() == at::kFloat && dtype != DType::F32;
    return p;
}

}  // namespace

void skinnyLinear(const at::Tensor& out, const at::Tensor& x, const at::Tensor& weight, bool siluMulInput,
                  SkinnyEngine engine)
{
    const char* op = "skinnyLinear";
    TORCH_CHECK(x.dim() == 2 && (!siluMulInput || x.size(1) % 2 == 0), op,
                ": x must be 2-D, of even width when it is a gate/up input, got ", x.sizes());
    SkinnyGemmParams p = skinnyParams(out, x, weight, siluMulInput ? x.size(1) / 2 : x.size(1), engine, op);
    p.siluMulInput = siluMulInput;
    dispatch(x, op, p, LECTOR_LAUNCHER(launchSkinnyGemm), &ref::skinnyGemmRef);
}

void skinnyLinearAddRmsNorm(const at::Tensor& out, const at::Tensor& delta, const at::Tensor& residualIn,
                            const at::Tensor& residualOut, const at::Tensor& normWeight, double eps,
                            const at::Tensor& weight, SkinnyEngine engine)
{
    const char* op = "skinnyLinearAddRmsNorm";
    TORCH_CHECK(delta.dim() == 2, op, ": delta must be [rows, k], got ", delta.sizes());
    const int64_t rows = delta.size(0), k = delta.size(1);
    SkinnyGemmParams p = skinnyParams(out, delta, weight, k, engine, op);
    for (const at::Tensor* t : {&residualIn, &residualOut, &normWeight}) checkLike(*t, delta, op, "residual or norm weight");
    for (const at::Tensor* r : {&residualIn, &residualOut})
        TORCH_CHECK(r->sizes() == delta.sizes() && r->stride(1) == 1 && r->stride(0) == residualIn.stride(0), op,
                    ": residuals must be ", delta.sizes(), " with one row stride, got ", r->sizes());
    TORCH_CHECK(residualIn.data_ptr() != residualOut.data_ptr(), op, ": residualOut must not alias residualIn");
    TORCH_CHECK(normWeight.dim() == 1 && normWeight.size(0) == k && normWeight.is_contiguous(), op,
                ": normWeight must be [", k, "], got ", normWeight.sizes());
    if (delta.is_cuda()) {
        const int64_t vec = 16 / delta.element_size();
        TORCH_CHECK(k % vec == 0 && delta.stride(0) % vec == 0 && residualIn.stride(0) % vec == 0 &&
                        (engine == SkinnyEngine::TensorCore ||
                         skinnyNormSmemBytes(static_cast<int>(rows), static_cast<int>(k),
                                             static_cast<int>(delta.element_size())) <= kSkinnyNormMaxSmemBytes),
                    op, ": needs 16-byte rows and rows x k within ", kSkinnyNormMaxSmemBytes, " bytes, got ",
                    delta.sizes());
    }
    p.normWeight = normWeight.data_ptr();
    p.residualIn = residualIn.data_ptr();
    p.residualOut = residualOut.data_ptr();
    p.residualStride = residualIn.stride(0);
    p.eps = static_cast<float>(eps);
    dispatch(delta, op, p, LECTOR_LAUNCHER(launchSkinnyGemm), &ref::skinnyGemmRef);
}

// --- norms, rotary, activation ---

namespace {

void runRmsNorm(const char* op, const at::Tensor& out, const at::Tensor* residual, const at::Tensor& input,
                const at::Tensor& weight, double eps)
{
    dtypeOf(input, op, "input");
    checkLike(out, input, op, "out");
    checkLike(weight, input, op, "weight");
    TORCH_CHECK(input.dim() == 2 && input.stride(1) == 1, op, ": input must be [numTokens, hidden] with contiguous rows, got ",
                input.sizes(), " strides ", input.strides());
    TORCH_CHECK(out.sizes() == input.sizes() && out.stride(1) == 1, op, ": out is ", out.sizes(), ", input is ",
                input.sizes());
    TORCH_CHECK(weight.dim() == 1 && weight.size(0) == input.size(1) && weight.is_contiguous(), op,
                ": weight must be [", input.size(1), "], got ", weight.sizes());
    RmsNormParams p;
    p.dtype = dtypeOf(input, op, "input");
    p.out = out.data_ptr();
    p.input = input.data_ptr();
    p.weight = weight.data_ptr();
    p.outStride = out.stride(0);
    p.inputStride = input.stride(0);
    if (residual) {
        checkLike(*residual, input, op, "residual");
        TORCH_CHECK(residual->sizes() == input.sizes() && residual->stride(1) == 1, op, ": residual is ",
                    residual->sizes(), ", input is ", input.sizes());
        p.residual = residual->data_ptr();
        p.residualStride = residual->stride(0);
    }
    p.numTokens = toInt(input.size(0), op, "numTokens");
    p.hidden = toInt(input.size(1), op, "hidden");
    p.eps = static_cast<float>(eps);
    dispatch(input, op, p, LECTOR_LAUNCHER(launchRmsNorm), &ref::rmsNormRef);
}

}  // namespace

void rmsNorm(const at::Tensor& out, const at::Tensor& input, const at::Tensor& weight, double eps)
{
    runRmsNorm("rmsNorm", out, nullptr, input, weight, eps);
}

void fusedAddRmsNorm(const at::Tensor& out, const at::Tensor& residual, const at::Tensor& input,
                     const at::Tensor& weight, double eps)
{
    runRmsNorm("fusedAddRmsNorm", out, &residual, input, weight, eps);
}

namespace {

QkNormRopeParams qkNormRopeParams(const at::Tensor& query, const at::Tensor& key, const at::Tensor& positions,
                                  const at::Tensor& cosSinCache, const at::Tensor& queryNormWeight,
                                  const at::Tensor& keyNormWeight, const std::vector<int>& sections, double eps,
                                  const char* op)
{
    const DType dtype = dtypeOf(query, op, "query");
    checkLike(key, query, op, "key");
    TORCH_CHECK(query.dim() == 3 && key.dim() == 3, op, ": query and key must be [numTokens, heads, headDim]");
    const int64_t numTokens = query.size(0), headDim = query.size(2);
    checkHeads(query, numTokens, query.size(1), headDim, op, "query");
    checkHeads(key, numTokens, key.size(1), headDim, op, "key");
    if (query.is_cuda()) TORCH_CHECK(headDim == 128, op, ": head dim ", headDim, " has no CUDA kernel; supported: 128");
    TORCH_CHECK(positions.defined() && (positions.scalar_type() == at::kLong || positions.scalar_type() == at::kInt),
                op, ": positions must be int64 or int32");
    checkAux(positions, query, positions.scalar_type(), 2, op, "positions");
    const int64_t numAxes = positions.size(0);
    TORCH_CHECK(numAxes >= 1 && numAxes <= 4 && positions.size(1) == numTokens, op,
                ": positions must be [1..4, ", numTokens, "], got ", positions.sizes());
    TORCH_CHECK(static_cast<int64_t>(sections.size()) == numAxes &&
                    std::accumulate(sections.begin(), sections.end(), int64_t(0)) == headDim / 2 &&
                    std::all_of(sections.begin(), sections.end(), [](int s) { return s >= 0; }),
                op, ": sections must give each of the ", numAxes, " position axes a share of ", headDim / 2,
                " frequencies");
    checkAux(cosSinCache, query, at::kFloat, 2, op, "cosSinCache");
    TORCH_CHECK(cosSinCache.size(1) == headDim && cosSinCache.size(0) > 0, op, ": cosSinCache must be [maxPosition, ",
                headDim, "], got ", cosSinCache.sizes());
    for (const at::Tensor* w : {&queryNormWeight, &keyNormWeight}) {
        if (!w->defined()) continue;
        checkLike(*w, query, op, "norm weight");
        TORCH_CHECK(w->dim() == 1 && w->size(0) == headDim && w->is_contiguous(), op, ": norm weights must be [",
                    headDim, "], got ", w->sizes());
    }
    QkNormRopeParams p;
    p.dtype = dtype;
    p.query = query.data_ptr();
    p.key = key.data_ptr();
    p.positions = positions.data_ptr();
    p.positionsInt64 = positions.scalar_type() == at::kLong;
    p.cosSinCache = cosSinCache.data_ptr<float>();
    p.queryNormWeight = queryNormWeight.defined() ? queryNormWeight.data_ptr() : nullptr;
    p.keyNormWeight = keyNormWeight.defined() ? keyNormWeight.data_ptr() : nullptr;
    p.queryTokenStride = query.stride(0);
    p.keyTokenStride = key.stride(0);
    p.positionsAxisStride = positions.stride(0);
    p.numTokens = toInt(numTokens, op, "numTokens");
    p.numQHeads = toInt(query.size(1), op, "numQHeads");
    p.numKvHeads = toInt(key.size(1), op, "numKvHeads");
    p.headDim = toInt(headDim, op, "headDim");
    p.maxPosition = toInt(cosSinCache.size(0), op, "maxPosition");
    p.numPosAxes = static_cast<int>(numAxes);
    for (int a = 0; a < p.numPosAxes; ++a) p.sections[a] = sections[a];
    p.eps = static_cast<float>(eps);
    return p;
}

}  // namespace

void qkNormRope(const at::Tensor& query, const at::Tensor& key, const at::Tensor& positions,
                const at::Tensor& cosSinCache, const at::Tensor& queryNormWeight, const at::Tensor& keyNormWeight,
                const std::vector<int>& sections, double eps)
{
    const char* op = "qkNormRope";
    const QkNormRopeParams p =
        qkNormRopeParams(query, key, positions, cosSinCache, queryNormWeight, keyNormWeight, sections, eps, op);
    dispatch(query, op, p, LECTOR_LAUNCHER(launchQkNormRope), &ref::qkNormRopeRef);
}

namespace {

// qkNormRopeWriteKv's checks and Params (also the fused rotation of pagedDecodeAttentionRope).
QkNormRopeParams qkNormRopeWriteKvParams(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                         const at::Tensor& positions, const at::Tensor& cosSinCache,
                                         const at::Tensor& queryNormWeight, const at::Tensor& keyNormWeight,
                                         const std::vector<int>& sections, double eps, const at::Tensor& keyCache,
                                         const at::Tensor& valueCache, const at::Tensor& slotMapping, const char* op)
{
    QkNormRopeParams p =
        qkNormRopeParams(query, key, positions, cosSinCache, queryNormWeight, keyNormWeight, sections, eps, op);
    checkCaches(keyCache, valueCache, op);
    checkLike(keyCache, query, op, "keyCache");
    TORCH_CHECK(keyCache.size(2) == key.size(1) && keyCache.size(3) == key.size(2), op, ": the cache is ",
                keyCache.sizes(), ", key is ", key.sizes());
    checkLike(value, query, op, "value");
    checkHeads(value, key.size(0), key.size(1), key.size(2), op, "value");
    checkAux(slotMapping, query, at::kLong, 1, op, "slotMapping");
    TORCH_CHECK(slotMapping.size(0) == key.size(0), op, ": slotMapping has ", slotMapping.size(0), " slots for ",
                key.size(0), " tokens");
    p.keyCache = keyCache.data_ptr();
    p.valueCache = valueCache.data_ptr();
    p.value = value.data_ptr();
    p.valueTokenStride = value.stride(0);
    p.slotMapping = slotMapping.data_ptr<int64_t>();
    p.numCacheSlots = keyCache.size(0) * keyCache.size(1);
    return p;
}

}  // namespace

void qkNormRopeWriteKv(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                       const at::Tensor& positions, const at::Tensor& cosSinCache, const at::Tensor& queryNormWeight,
                       const at::Tensor& keyNormWeight, const std::vector<int>& sections, double eps,
                       const at::Tensor& keyCache, const at::Tensor& valueCache, const at::Tensor& slotMapping)
{
    const char* op = "qkNormRopeWriteKv";
    const QkNormRopeParams p = qkNormRopeWriteKvParams(query, key, value, positions, cosSinCache, queryNormWeight,
                                                       keyNormWeight, sections, eps, keyCache, valueCache,
                                                       slotMapping, op);
    dispatch(query, op, p, LECTOR_LAUNCHER(launchQkNormRope), &ref::qkNormRopeRef);
}

void pagedDecodeAttentionRope(const at::Tensor& out, const at::Tensor& query, const at::Tensor& key,
                              const at::Tensor& value, const at::Tensor& keyCache, const at::Tensor& valueCache,
                              const at::Tensor& blockTable, const at::Tensor& contextLens, int64_t maxContextLen,
                              double scale, int64_t rowPartitions, const at::Tensor& positions,
                              const at::Tensor& cosSinCache, const at::Tensor& queryNormWeight,
                              const at::Tensor& keyNormWeight, const std::vector<int>& sections, double eps,
                              const at::Tensor& slotMapping)
{
    const char* op = "pagedDecodeAttentionRope";
    TORCH_CHECK(rowPartitions > 0, op, ": needs rowPartitions > 0 (the one-pass kernel), got ", rowPartitions);
    if (!query.is_cuda()) {  // the two references in turn: the same results, query and key left rotated
        qkNormRopeWriteKv(query, key, value, positions, cosSinCache, queryNormWeight, keyNormWeight, sections, eps,
                          keyCache, valueCache, slotMapping);
        pagedDecodeAttention(out, query, keyCache, valueCache, blockTable, contextLens, maxContextLen, scale, -1, 0,
                             rowPartitions);
        return;
    }
    at::Tensor workspace;
    PagedDecodeAttentionParams p =
        decodeAttentionParams(out, query, keyCache, valueCache, blockTable, contextLens, maxContextLen, scale, -1, 0,
                              rowPartitions, workspace, op);
    p.rope = qkNormRopeWriteKvParams(query, key, value, positions, cosSinCache, queryNormWeight, keyNormWeight,
                                     sections, eps, keyCache, valueCache, slotMapping, op);
    dispatch(query, op, p, LECTOR_LAUNCHER(launchPagedDecodeAttention), &ref::pagedDecodeAttentionRef);
}

void siluAndMul(const at::Tensor& out, const at::Tensor& input)
{
    const char* op = "siluAndMul";
    const DType dtype = dtypeOf(input, op, "input");
    checkLike(out, input, op, "out");
    TORCH_CHECK(input.dim() == 2 && input.size(1) % 2 == 0 && input.stride(1) == 1, op,
                ": input must be [numTokens, 2 * d] with contiguous rows, got ", input.sizes());
    TORCH_CHECK(out.dim() == 2 && out.size(0) == input.size(0) && out.size(1) * 2 == input.size(1) &&
                    out.stride(1) == 1,
                op, ": out must be [", input.size(0), ", ", input.size(1) / 2, "], got ", out.sizes());
    SiluAndMulParams p;
    p.dtype = dtype;
    p.out = out.data_ptr();
    p.input = input.data_ptr();
    p.outStride = out.stride(0);
    p.inputStride = input.stride(0);
    p.numTokens = toInt(input.size(0), op, "numTokens");
    p.d = toInt(out.size(1), op, "d");
    if (p.d == 0) return;
    dispatch(input, op, p, LECTOR_LAUNCHER(launchSiluAndMul), &ref::siluAndMulRef);
}

// --- a whole decode step of one sequence in one kernel ---

std::string PersistentDecoder::unsupportedReason(const PersistentDecoderModel& m, Kind kind)
{
    auto because = [](auto&&... parts) {
        std::ostringstream out;
        (out << ... << parts);
        return out.str();
    };
    const at::Tensor& anchor = m.embed;
    if (!anchor.defined() || anchor.dim() != 2 || m.layers.empty() || !m.layers[0].queryNorm.defined() ||
        !m.layers[0].down.defined() || m.layers[0].down.dim() != 2 || m.numKvHeads <= 0 ||
        m.numQHeads % m.numKvHeads != 0)
        return "incomplete model (embedding, layers or head counts)";
    const int64_t hidden = anchor.size(1), vocab = anchor.size(0);
    const int64_t headDim = m.layers[0].queryNorm.size(0), intermediate = m.layers[0].down.size(1);
    const at::ScalarType type = anchor.scalar_type();
    if (type != at::kFloat && type != at::kHalf && type != at::kBFloat16) return "dtype is not float32/float16/bfloat16";
    // Contiguous, of these sizes, on the anchor's device in its dtype, 16-byte aligned for the bulk copies.
    auto fits = [&](const at::Tensor& t, std::initializer_list<int64_t> sizes) {
        return t.defined() && t.sizes() == at::IntArrayRef(sizes) && t.device() == anchor.device() &&
               t.scalar_type() == type && t.is_contiguous() && reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
    };
    const int64_t qkvRows = (m.numQHeads + 2 * m.numKvHeads) * headDim, attnWidth = m.numQHeads * headDim;
    if (!fits(m.lmHead, {vocab, hidden}) || !fits(m.finalNorm, {hidden})) return "LM head or final norm of another shape";
    const int64_t numBlocks = m.layers[0].keyCache.defined() ? m.layers[0].keyCache.size(0) : 0;
    for (size_t l = 0; l < m.layers.size(); ++l) {
        const PersistentDecoderModel::Layer& w = m.layers[l];
        if (!fits(w.inputNorm, {hidden}) || !fits(w.qkv, {qkvRows, hidden}) || !fits(w.queryNorm, {headDim}) ||
            !fits(w.keyNorm, {headDim}) || !fits(w.o, {hidden, attnWidth}) || !fits(w.postNorm, {hidden}) ||
            !fits(w.gateUp, {2 * intermediate, hidden}) || !fits(w.down, {hidden, intermediate}))
            return because("layer ", l, " has a tensor of another shape, dtype or device, or not contiguous");
        if (!fits(w.keyCache, {numBlocks, kKvBlockSize, m.numKvHeads, headDim}) ||
            !fits(w.valueCache, {numBlocks, kKvBlockSize, m.numKvHeads, headDim}))
            return because("layer ", l, "'s KV cache is not [", numBlocks, ", ", kKvBlockSize, ", ", m.numKvHeads, ", ",
                           headDim, "] in the model's dtype");
    }
    if (!m.cosSin.defined() || m.cosSin.scalar_type() != at::kFloat || m.cosSin.dim() != 2 ||
        m.cosSin.size(1) != headDim || !m.cosSin.is_contiguous() || m.cosSin.device() != anchor.device())
        return "rotary table is not [maxPosition, headDim] float32";
    if (m.sections.empty() || m.sections.size() > 4 ||
        std::accumulate(m.sections.begin(), m.sections.end(), int64_t(0)) != headDim / 2)
        return "XD-RoPE sections do not cover headDim / 2";
    if (anchor.is_cpu()) return "";
    if (!anchor.is_cuda()) return because("tensors on ", anchor.device());
#ifndef LECTOR_GPU_HAVE_LAUNCHERS
    return "this build has no CUDA kernels";
#else
    // The model's shapes as the launchers check them.
    PersistentDecodeParams shape;
    shape.dtype = type == at::kHalf ? DType::F16 : type == at::kBFloat16 ? DType::BF16 : DType::F32;
    shape.hidden = static_cast<int>(hidden);
    shape.intermediate = static_cast<int>(intermediate);
    shape.numQHeads = m.numQHeads;
    shape.numKvHeads = m.numKvHeads;
    shape.headDim = static_cast<int>(headDim);
    shape.numPosAxes = static_cast<int>(m.sections.size());
    if (kind == Kind::HeadParallel) {
        if (const char* why = headParallelDecodeShapeMismatch(shape); *why) return why;
        const c10::DeviceGuard guard(anchor.device());
        if (!headParallelDecodeSupported(anchor.device().index()))
            return "the head-parallel kernels need sm_90 and room for thread-block clusters of 16";
        return "";
    }
    if (persistentDecodeCtas(anchor.device().index()) == 0) return "the kernel needs sm_90 or newer";
#endif
    const int64_t group = m.numQHeads / m.numKvHeads, slotElems = kPersistentDecodeMaxWidth;
    if (type == at::kFloat) return "the kernel takes float16 or bfloat16";
    if (headDim != 128 || group > 2) return because("head dim ", headDim, ", group ", group, " (kernel: 128, 1 or 2)");
    if (hidden % 8 != 0 || intermediate % 8 != 0 || hidden > slotElems || intermediate > slotElems || attnWidth > slotElems)
        return because("hidden ", hidden, " / intermediate ", intermediate, ": multiples of 8 up to ", slotElems);
#ifdef LECTOR_GPU_HAVE_LAUNCHERS
    shape.numCtas = persistentDecodeCtas(anchor.device().index());
    int optIn = 0;
    cudaDeviceGetAttribute(&optIn, cudaDevAttrMaxSharedMemoryPerBlockOptin, anchor.device().index());
    if (persistentDecodeSmemBytes(shape) > optIn)
        return because("needs ", persistentDecodeSmemBytes(shape), " bytes of shared memory, the device has ", optIn);
#endif
    return "";
}

PersistentDecoder::PersistentDecoder(PersistentDecoderModel model, Kind kind) : m_model(std::move(model)), m_kind(kind)
{
    const char* op = "PersistentDecoder";
    const std::string why = unsupportedReason(m_model, kind);
    TORCH_CHECK(why.empty(), op, ": ", why);
    const PersistentDecoderModel& m = m_model;
    PersistentDecodeParams& p = m_params;
    p.dtype = dtypeOf(m.embed, op, "embed");
    p.numLayers = toInt(static_cast<int64_t>(m.layers.size()), op, "numLayers");
    p.hidden = toInt(m.embed.size(1), op, "hidden");
    p.intermediate = toInt(m.layers[0].down.size(1), op, "intermediate");
    p.numQHeads = m.numQHeads;
    p.numKvHeads = m.numKvHeads;
    p.headDim = toInt(m.layers[0].queryNorm.size(0), op, "headDim");
    p.vocab = toInt(m.embed.size(0), op, "vocab");
    p.eps = static_cast<float>(m.eps);
    p.scale = static_cast<float>(m.scale);
    p.embed = m.embed.data_ptr();
    p.finalNorm = m.finalNorm.data_ptr();
    p.lmHead = m.lmHead.data_ptr();
    p.cosSin = m.cosSin.data_ptr<float>();
    p.maxPosition = toInt(m.cosSin.size(0), op, "maxPosition");
    p.numPosAxes = static_cast<int>(m.sections.size());
    std::copy(m.sections.begin(), m.sections.end(), p.sections);
    p.numCacheBlocks = toInt(m.layers[0].keyCache.size(0), op, "numCacheBlocks");
    std::vector<int64_t> table;
    for (const PersistentDecoderModel::Layer& w : m.layers) {
        const at::Tensor* order[kPlCount] = {&w.inputNorm, &w.qkv, &w.queryNorm, &w.keyNorm, &w.o,
                                             &w.postNorm, &w.gateUp, &w.down, &w.keyCache, &w.valueCache};
        for (const at::Tensor* t : order) table.push_back(reinterpret_cast<int64_t>(t->data_ptr()));
    }
    m_table = at::tensor(table, at::kLong).to(m.embed.device());
    p.layers = reinterpret_cast<const void* const*>(m_table.data_ptr<int64_t>());
#ifdef LECTOR_GPU_HAVE_LAUNCHERS
    if (m.embed.is_cuda() && kind == Kind::HeadParallel) {
        m_workspace = at::empty({headParallelWorkspace().total}, m.embed.options().dtype(at::kByte));
        p.workspace = m_workspace.data_ptr();
    } else if (m.embed.is_cuda()) {
        p.numCtas = persistentDecodeCtas(m.embed.device().index());
        m_workspace = at::empty({persistentDecodeWorkspaceBytes(p)}, m.embed.options().dtype(at::kByte));
        m_counters = at::zeros({persistentDecodeCounterWords(p.numLayers, p.numKvHeads)}, m.embed.options().dtype(at::kInt));
        p.workspace = m_workspace.data_ptr();
        p.counters = reinterpret_cast<uint32_t*>(m_counters.data_ptr<int32_t>());
    }
#endif
}

int64_t PersistentDecoder::prefetchedContext() const
{
    return m_kind == Kind::HeadParallel ? int64_t(kHpCluster) * kHpPrefetchKeys : std::numeric_limits<int64_t>::max();
}

void PersistentDecoder::step(const at::Tensor& logits, const at::Tensor& tokenId, const at::Tensor& positions,
                             const at::Tensor& slot, const at::Tensor& contextLen, const at::Tensor& blockTable) const
{
    const char* op = "PersistentDecoder::step";
    const at::Tensor& anchor = m_model.embed;
    TORCH_CHECK(logits.defined() && logits.device() == anchor.device() && logits.scalar_type() == at::kFloat &&
                    logits.numel() == m_params.vocab && logits.is_contiguous(),
                op, ": logits must be ", m_params.vocab, " contiguous float32 values on ", anchor.device());
    PersistentDecodeParams p = m_params;
    p.logits = logits.data_ptr<float>();
    run(p, tokenId, positions, slot, contextLen, blockTable, op);
}

bool PersistentDecoder::hasStepHidden() const
{
    return m_kind == Kind::HeadParallel || !m_model.embed.is_cuda();
}

void PersistentDecoder::stepHidden(const at::Tensor& hidden, const at::Tensor& tokenId, const at::Tensor& positions,
                                   const at::Tensor& slot, const at::Tensor& contextLen, const at::Tensor& blockTable) const
{
    const char* op = "PersistentDecoder::stepHidden";
    const at::Tensor& anchor = m_model.embed;
    TORCH_CHECK(hasStepHidden(), op, ": the persistent kernel computes its logits itself");
    TORCH_CHECK(hidden.defined() && hidden.device() == anchor.device() && hidden.scalar_type() == anchor.scalar_type() &&
                    hidden.numel() == m_params.hidden && hidden.is_contiguous(),
                op, ": hidden must be ", m_params.hidden, " contiguous ", anchor.scalar_type(), " values on ", anchor.device());
    PersistentDecodeParams p = m_params;
    p.hiddenOut = hidden.data_ptr();
    run(p, tokenId, positions, slot, contextLen, blockTable, op);
}

void PersistentDecoder::run(PersistentDecodeParams p, const at::Tensor& tokenId, const at::Tensor& positions,
                            const at::Tensor& slot, const at::Tensor& contextLen, const at::Tensor& blockTable,
                            const char* op) const
{
    const at::Tensor& anchor = m_model.embed;
    for (const at::Tensor* t : {&tokenId, &slot, &contextLen, &blockTable, &positions})
        TORCH_CHECK(t->defined() && t->device() == anchor.device(), op, ": step inputs must be on ", anchor.device());
    TORCH_CHECK(tokenId.scalar_type() == at::kLong && tokenId.numel() == 1 && slot.scalar_type() == at::kLong &&
                    slot.numel() == 1 && contextLen.scalar_type() == at::kInt && contextLen.numel() == 1,
                op, ": tokenId and slot must be one int64, contextLen one int32");
    TORCH_CHECK(positions.scalar_type() == at::kLong && positions.dim() == 2 &&
                    positions.size(0) == m_params.numPosAxes && positions.size(1) == 1,
                op, ": positions must be [", m_params.numPosAxes, ", 1] int64, got ", positions.sizes());
    TORCH_CHECK(blockTable.scalar_type() == at::kInt && blockTable.is_contiguous() && blockTable.numel() > 0, op,
                ": blockTable must be contiguous int32 block ids");
    if (contextLen.is_cpu())  // the reference reads the table: check it covers the context
        TORCH_CHECK(ceilDiv(std::max(*contextLen.data_ptr<int32_t>(), 0), kKvBlockSize) <= blockTable.numel(), op,
                    ": blockTable has ", blockTable.numel(), " blocks for ", *contextLen.data_ptr<int32_t>(), " keys");
    p.tokenId = tokenId.data_ptr<int64_t>();
    p.positions = positions.data_ptr<int64_t>();
    p.positionsAxisStride = positions.stride(0);
    p.slot = slot.data_ptr<int64_t>();
    p.contextLen = contextLen.data_ptr<int32_t>();
    p.blockTable = blockTable.data_ptr<int32_t>();
    if (m_kind == Kind::HeadParallel)
        dispatch(anchor, op, p, LECTOR_LAUNCHER(launchHeadParallelDecode), &ref::persistentDecodeRef);
    else
        dispatch(anchor, op, p, LECTOR_LAUNCHER(launchPersistentDecode), &ref::persistentDecodeRef);
}

// --- sampling ---

namespace {

// The device pointers of a SampleAdvance of numSeqs rows on anchor's device; offsets: the draw counters.
DecodeAdvance decodeAdvanceOf(const SampleAdvance& a, const at::Tensor& anchor, int64_t numSeqs, const at::Tensor& offsets,
                              const char* op)
{
    checkAux(a.contextLens, anchor, at::kInt, 1, op, "advance.contextLens");
    checkAux(a.slots, anchor, at::kLong, 1, op, "advance.slots");
    checkAux(a.blockTable, anchor, at::kInt, 2, op, "advance.blockTable");
    checkAux(offsets, anchor, at::kLong, 1, op, "offsets");
    TORCH_CHECK(a.positions.defined() && a.positions.device() == anchor.device() && a.positions.scalar_type() == at::kLong &&
                    a.positions.dim() == 2 && a.positions.size(1) == numSeqs && a.positions.stride(1) == 1,
                op, ": advance.positions must be [axes, ", numSeqs, "] int64 with contiguous rows on ", anchor.device(),
                ", got ", a.positions.sizes());
    TORCH_CHECK(a.contextLens.size(0) == numSeqs && a.slots.size(0) == numSeqs && a.blockTable.size(0) == numSeqs &&
                    a.blockTable.size(1) > 0 && offsets.size(0) == numSeqs,
                op, ": advance tensors must have ", numSeqs, " rows");
    DecodeAdvance d;
    d.contextLens = a.contextLens.data_ptr<int32_t>();
    d.positions = a.positions.data_ptr<int64_t>();
    d.positionsAxisStride = a.positions.size(0) > 1 ? a.positions.stride(0) : numSeqs;
    d.numPosAxes = toInt(a.positions.size(0), op, "advance axes");
    d.slots = a.slots.data_ptr<int64_t>();
    d.blockTable = a.blockTable.data_ptr<int32_t>();
    d.blockTableStride = a.blockTable.size(1);
    d.offsets = offsets.data_ptr<int64_t>();
    if (a.history.defined()) {
        checkAux(a.history, anchor, at::kLong, 1, op, "advance.history");
        TORCH_CHECK(a.history.size(0) == numSeqs, op, ": advance.history must have ", numSeqs, " entries");
        d.history = a.history.data_ptr<int64_t>();
    }
    return d;
}

// A kernel's scratch of `need` int64 words on anchor's device: the caller's (kept zero between launches),
// checked, or zeros allocated here. Keep the result alive until the launch is queued.
at::Tensor scratchWords(const at::Tensor& given, const at::Tensor& anchor, int64_t need, const char* op)
{
    if (!given.defined()) return at::zeros({need}, anchor.options().dtype(at::kLong));
    checkAux(given, anchor, at::kLong, 1, op, "scratch");
    TORCH_CHECK(given.size(0) >= need, op, ": scratch needs ", need, " words, got ", given.size(0));
    return given;
}

}  // namespace

void sampleTokens(const at::Tensor& outTokens, const at::Tensor& logits, const at::Tensor& presence,
                  const at::Tensor& temperature, const at::Tensor& topK, const at::Tensor& repetitionPenalty,
                  const at::Tensor& seeds, const at::Tensor& offsets, bool updatePresence,
                  const at::Tensor& presenceRows, const at::Tensor& scratch, const SampleAdvance* advance)
{
    const char* op = "sampleTokens";
    const DType dtype = dtypeOf(logits, op, "logits");
    TORCH_CHECK(logits.dim() == 2 && logits.stride(1) == 1 && logits.size(1) > 0, op,
                ": logits must be [numSeqs, vocab] with contiguous rows, got ", logits.sizes());
    const int64_t numSeqs = logits.size(0);
    checkAux(outTokens, logits, at::kLong, 1, op, "outTokens");
    checkAux(temperature, logits, at::kFloat, 1, op, "temperature");
    checkAux(topK, logits, at::kInt, 1, op, "topK");
    checkAux(repetitionPenalty, logits, at::kFloat, 1, op, "repetitionPenalty");
    checkAux(seeds, logits, at::kLong, 1, op, "seeds");
    checkAux(offsets, logits, at::kLong, 1, op, "offsets");
    for (const at::Tensor* t : {&outTokens, &temperature, &topK, &repetitionPenalty, &seeds, &offsets})
        TORCH_CHECK(t->size(0) == numSeqs, op, ": per-sequence tensors must have ", numSeqs, " entries, got ",
                    t->sizes());
    SampleTokensParams p;
    if (presence.defined()) {
        TORCH_CHECK(presence.scalar_type() == at::kByte || presence.scalar_type() == at::kBool, op,
                    ": presence must be uint8 or bool, got ", presence.scalar_type());
        const bool rowsGiven = presenceRows.defined();
        TORCH_CHECK(presence.device() == logits.device() && presence.dim() == 2 &&
                        presence.size(1) == logits.size(1) && (rowsGiven || presence.size(0) == numSeqs) &&
                        presence.stride(1) == 1,
                    op, ": presence must be ", (rowsGiven ? "[rows, vocab]" : "[numSeqs, vocab]"), " like logits ",
                    logits.sizes(), " on ", logits.device(), " with contiguous rows, got ", presence.sizes());
        p.presence = static_cast<uint8_t*>(presence.data_ptr());
        p.presenceStride = presence.stride(0);
        if (rowsGiven) {
            checkAux(presenceRows, logits, at::kLong, 1, op, "presenceRows");
            TORCH_CHECK(presenceRows.size(0) == numSeqs, op, ": presenceRows must have ", numSeqs, " entries");
            p.presenceRows = presenceRows.data_ptr<int64_t>();
            if (presenceRows.is_cpu()) {  // the reference reads them too: check the range here
                const int64_t* r = p.presenceRows;
                for (int64_t i = 0; i < numSeqs; ++i)
                    TORCH_CHECK(r[i] >= 0 && r[i] < presence.size(0), op, ": presence row ", r[i], " is out of range");
            }
        }
    }
    p.dtype = dtype;
    p.logits = logits.data_ptr();
    p.temperature = temperature.data_ptr<float>();
    p.topK = topK.data_ptr<int32_t>();
    p.repetitionPenalty = repetitionPenalty.data_ptr<float>();
    p.seeds = seeds.data_ptr<int64_t>();
    p.offsets = offsets.data_ptr<int64_t>();
    p.outTokens = outTokens.data_ptr<int64_t>();
    p.logitsStride = logits.stride(0);
    p.numSeqs = toInt(numSeqs, op, "numSeqs");
    p.vocabSize = toInt(logits.size(1), op, "vocab");
    p.updatePresence = updatePresence;
    at::Tensor words;  // keeps a scratch allocated here alive until the launch is queued
    if (logits.is_cuda()) {
        p.slices = sampleTokensSlices(p.numSeqs, p.vocabSize);
        const int64_t need = gpu::sampleTokensScratchWords(p.numSeqs, p.vocabSize);
        if (need > 0) {
            words = scratchWords(scratch, logits, need, op);
            p.scratch = reinterpret_cast<unsigned long long*>(words.data_ptr<int64_t>());
        }
    }
    if (advance) p.advance = decodeAdvanceOf(*advance, logits, numSeqs, offsets, op);
    dispatch(logits, op, p, LECTOR_LAUNCHER(launchSampleTokens), &ref::sampleTokensRef);
}

int64_t sampleScratchWords(int64_t numSeqs, int64_t vocab)
{
    const int n = toInt(numSeqs, "sampleScratchWords", "numSeqs");
    return gpu::sampleTokensScratchWords(n, toInt(vocab, "sampleScratchWords", "vocab"));
}

// --- greedy screen ---

namespace {

int greedyScreenCtasOn(int64_t vocab, const c10::Device& device)
{
    return greedyScreenCtas(toInt(vocab, "greedyScreen", "vocab"), multiProcessors(device, "greedyScreen"));
}

}  // namespace

GreedyScreenHead quantizeGreedyScreen(const at::Tensor& weight)
{
    TORCH_CHECK(weight.dim() == 2 && weight.size(0) > 0 && weight.size(1) > 0, "quantizeGreedyScreen: weight must be "
                "[vocab, k], got ", weight.sizes());
    (void)dtypeOf(weight, "quantizeGreedyScreen", "weight");
    GreedyScreenHead h;
    h.q = at::empty(weight.sizes(), weight.options().dtype(at::kChar));
    h.scales = at::empty({weight.size(0)}, weight.options().dtype(at::kFloat));
    // In stretches of rows, so that loading a model needs no float32 copy of its whole head (495 MB here).
    constexpr int64_t kRowsAtOnce = 8192;
    for (int64_t r = 0; r < weight.size(0); r += kRowsAtOnce) {
        const int64_t n = std::min(kRowsAtOnce, weight.size(0) - r);
        const at::Tensor w = weight.narrow(0, r, n).to(at::kFloat);
        // Divided by a tensor of 127s, not the scalar: for a scalar divisor libtorch's CUDA kernel multiplies by
        // its reciprocal, one ulp off the CPU's quotient now and then (call 191), and a head quantized on
        // either device should be the same head.
        const at::Tensor amax = w.abs().amax(1);
        const at::Tensor scales = amax / at::full_like(amax, 127.0f);
        // A zero row keeps scale 0 and q 0; dividing by 1 there avoids 0 / 0.
        const at::Tensor divisor = at::where(scales > 0, scales, at::ones_like(scales)).unsqueeze(1);
        h.scales.narrow(0, r, n).copy_(scales);
        h.q.narrow(0, r, n).copy_((w / divisor).round().clamp(-127.0, 127.0).to(at::kChar));
    }
    return h;
}

std::string greedyScreenUnsupported(const at::Tensor& weight)
{
    if (weight.dim() != 2 || weight.stride(1) != 1) return "the LM head is not [vocab, k] with contiguous rows";
    if (weight.scalar_type() != at::kFloat && weight.scalar_type() != at::kHalf && weight.scalar_type() != at::kBFloat16)
        return "the LM head is not float32, float16 or bfloat16";
    if (!weight.is_cuda()) return weight.is_cpu() ? "" : "the LM head is on neither CPU nor CUDA";
    const int64_t k = weight.size(1);
    if (k % 16 != 0 || k > kScreenMaxK)
        return "the CUDA kernel takes rows of a multiple of 16 up to " + std::to_string(kScreenMaxK) + " elements, not " +
               std::to_string(k);
    if ((reinterpret_cast<uintptr_t>(weight.data_ptr()) & 15u) || (weight.stride(0) * weight.element_size()) % 16 != 0)
        return "the LM head's rows are not 16-byte aligned";
#ifndef LECTOR_GPU_HAVE_LAUNCHERS
    return "this build has no CUDA kernels";
#else
    return "";
#endif
}

int64_t greedyScreenScratchWords(int64_t vocab, const c10::Device& device)
{
    return gpu::greedyScreenScratchWords(greedyScreenCtasOn(vocab, device));
}

void greedyScreen(const at::Tensor& outToken, const at::Tensor& x, const at::Tensor& weight, const GreedyScreenHead& head,
                  const at::Tensor& presence, const at::Tensor& presenceRow, const at::Tensor& penalty, bool updatePresence,
                  const at::Tensor& scratch, const SampleAdvance* advance, const at::Tensor& offsets, const at::Tensor& stats)
{
    const char* op = "greedyScreen";
    const std::string why = greedyScreenUnsupported(weight);
    TORCH_CHECK(why.empty(), op, ": ", why);
    const DType dtype = dtypeOf(weight, op, "weight");
    const int64_t vocab = weight.size(0), k = weight.size(1);
    TORCH_CHECK(x.scalar_type() == weight.scalar_type() && x.device() == weight.device() && x.is_contiguous() &&
                    x.numel() == k,
                op, ": x must be ", k, " contiguous ", weight.scalar_type(), " values on ", weight.device(), ", got ",
                x.sizes(), " ", x.scalar_type());
    TORCH_CHECK(head.q.defined() && head.q.scalar_type() == at::kChar && head.q.device() == weight.device() &&
                    head.q.is_contiguous() && head.q.sizes() == weight.sizes(),
                op, ": head.q must be contiguous int8 ", weight.sizes(), " (quantizeGreedyScreen)");
    checkAux(head.scales, weight, at::kFloat, 1, op, "head.scales");
    TORCH_CHECK(head.scales.size(0) == vocab, op, ": head.scales must have ", vocab, " entries");
    checkAux(outToken, weight, at::kLong, 1, op, "outToken");
    TORCH_CHECK(outToken.size(0) == 1, op, ": outToken must be one int64");
    GreedyScreenParams p;
    p.dtype = dtype;
    p.x = x.data_ptr();
    p.weight = weight.data_ptr();
    p.weightStride = weight.stride(0);
    p.q = head.q.data_ptr<int8_t>();
    p.scales = head.scales.data_ptr<float>();
    p.vocab = toInt(vocab, op, "vocab");
    p.k = toInt(k, op, "k");
    p.outToken = outToken.data_ptr<int64_t>();
    p.updatePresence = updatePresence;
    if (presence.defined()) {
        TORCH_CHECK((presence.scalar_type() == at::kByte || presence.scalar_type() == at::kBool) && presence.dim() == 2 &&
                        presence.size(1) == vocab && presence.stride(1) == 1 && presence.device() == weight.device(),
                    op, ": presence must be [rows, ", vocab, "] uint8 with contiguous rows on ", weight.device());
        checkAux(presenceRow, weight, at::kLong, 1, op, "presenceRow");
        TORCH_CHECK(presenceRow.size(0) == 1, op, ": presenceRow must be one int64");
        if (presenceRow.is_cpu())
            TORCH_CHECK(*presenceRow.data_ptr<int64_t>() >= 0 && *presenceRow.data_ptr<int64_t>() < presence.size(0), op,
                        ": presence row ", *presenceRow.data_ptr<int64_t>(), " is out of range");
        p.presence = static_cast<uint8_t*>(presence.data_ptr());
        p.presenceStride = presence.stride(0);
        p.presenceRow = presenceRow.data_ptr<int64_t>();
    }
    if (penalty.defined()) {
        checkAux(penalty, weight, at::kFloat, 1, op, "penalty");
        TORCH_CHECK(penalty.size(0) == 1, op, ": penalty must be one float32");
        p.penalty = penalty.data_ptr<float>();
    }
    p.numCtas = greedyScreenCtasOn(vocab, weight.device());
    const at::Tensor words = scratchWords(scratch, weight, gpu::greedyScreenScratchWords(p.numCtas), op);
    p.scratch = reinterpret_cast<unsigned long long*>(words.data_ptr<int64_t>());
    if (stats.defined()) {
        checkAux(stats, weight, at::kLong, 1, op, "stats");
        TORCH_CHECK(stats.size(0) >= 2, op, ": stats must hold 2 int64");
        p.stats = reinterpret_cast<unsigned long long*>(stats.data_ptr<int64_t>());
    }
    if (advance) p.advance = decodeAdvanceOf(*advance, weight, 1, offsets, op);
    dispatch(weight, op, p, LECTOR_LAUNCHER(launchGreedyScreen), &ref::greedyScreenRef);
}

}  // namespace lector::gpu
