// Reference persistent decode step: the per-layer chain of references (see the header).
#include "gpu/ref/persistent_decode_ref.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "gpu/ref/paged_decode_attention_ref.h"
#include "gpu/ref/qk_norm_rope_ref.h"
#include "gpu/ref/rms_norm_ref.h"
#include "gpu/ref/silu_and_mul_ref.h"
#include "gpu/ref/skinny_gemm_ref.h"

namespace lector::gpu::ref {

void persistentDecodeRef(const PersistentDecodeParams& p)
{
    const DType t = p.dtype;
    const size_t e = static_cast<size_t>(dtypeBytes(t));
    const int H = p.hidden, I = p.intermediate, D = p.headDim, HQ = p.numQHeads, HK = p.numKvHeads;
    const int qkvWidth = (HQ + 2 * HK) * D;
    std::vector<unsigned char> residual(H * e), normed(H * e), qkv(qkvWidth * e), attn(size_t(HQ) * D * e),
        delta(H * e), gateUp(2 * size_t(I) * e), act(I * e);
    auto tensor = [&](int l, int which) { return p.layers[l * kPlCount + which]; };
    // out [n] = x [k] weight^T, one row (outFloat: the rounded product widened, like the kernels' logits).
    auto project = [&](void* out, const void* x, const void* weight, int n, int k, bool outFloat = false) {
        skinnyGemmRef(skinnyRowParams(t, out, x, weight, n, k, outFloat));
    };
    // normed = RMSNorm(residual += delta) (no add for the first layer).
    auto addNorm = [&](bool add, const void* weight) {
        RmsNormParams r;
        r.dtype = t;
        r.out = normed.data();
        r.input = add ? delta.data() : residual.data();
        r.residual = add ? residual.data() : nullptr;
        r.weight = weight;
        r.outStride = r.inputStride = r.residualStride = H;
        r.numTokens = 1;
        r.hidden = H;
        r.eps = p.eps;
        rmsNormRef(r);
    };

    const int64_t id = std::clamp<int64_t>(*p.tokenId, 0, p.vocab - 1);
    std::memcpy(residual.data(), static_cast<const unsigned char*>(p.embed) + id * H * e, H * e);
    for (int l = 0; l < p.numLayers; ++l) {
        addNorm(l > 0, tensor(l, kPlInputNorm));
        project(qkv.data(), normed.data(), tensor(l, kPlQkv), qkvWidth, H);

        QkNormRopeParams r;
        r.dtype = t;
        r.query = qkv.data();
        r.key = qkv.data() + size_t(HQ) * D * e;
        r.value = qkv.data() + size_t(HQ + HK) * D * e;
        r.positions = p.positions;
        r.positionsInt64 = true;
        r.positionsAxisStride = p.positionsAxisStride;
        r.cosSinCache = p.cosSin;
        r.queryNormWeight = tensor(l, kPlQueryNorm);
        r.keyNormWeight = tensor(l, kPlKeyNorm);
        r.queryTokenStride = r.keyTokenStride = r.valueTokenStride = qkvWidth;
        r.numTokens = 1;
        r.numQHeads = HQ;
        r.numKvHeads = HK;
        r.headDim = D;
        r.maxPosition = p.maxPosition;
        r.numPosAxes = p.numPosAxes;
        std::copy(std::begin(p.sections), std::end(p.sections), std::begin(r.sections));
        r.eps = p.eps;
        r.keyCache = const_cast<void*>(tensor(l, kPlKeyCache));
        r.valueCache = const_cast<void*>(tensor(l, kPlValueCache));
        r.slotMapping = p.slot;
        r.numCacheSlots = int64_t(p.numCacheBlocks) * kKvBlockSize;
        qkNormRopeRef(r);

        PagedDecodeAttentionParams a;
        a.dtype = t;
        a.out = attn.data();
        a.query = qkv.data();
        a.keyCache = r.keyCache;
        a.valueCache = r.valueCache;
        a.blockTable = p.blockTable;
        a.contextLens = p.contextLen;
        a.querySeqStride = qkvWidth;
        a.outSeqStride = HQ * D;
        a.numSeqs = 1;
        a.numQHeads = HQ;
        a.numKvHeads = HK;
        a.headDim = D;
        a.numBlocks = p.numCacheBlocks;
        a.maxContextLen = std::max(*p.contextLen, 0);
        a.scale = p.scale;
        pagedDecodeAttentionRef(a);

        project(delta.data(), attn.data(), tensor(l, kPlO), H, HQ * D);
        addNorm(true, tensor(l, kPlPostNorm));
        project(gateUp.data(), normed.data(), tensor(l, kPlGateUp), 2 * I, H);
        SiluAndMulParams s;
        s.dtype = t;
        s.out = act.data();
        s.input = gateUp.data();
        s.outStride = I;
        s.inputStride = 2 * I;
        s.numTokens = 1;
        s.d = I;
        siluAndMulRef(s);
        project(delta.data(), act.data(), tensor(l, kPlDown), H, I);
    }
    addNorm(true, p.finalNorm);
    if (p.hiddenOut) {
        std::memcpy(p.hiddenOut, normed.data(), H * e);
        return;
    }
    project(p.logits, normed.data(), p.lmHead, p.vocab, H, t != DType::F32);
}

}  // namespace lector::gpu::ref
