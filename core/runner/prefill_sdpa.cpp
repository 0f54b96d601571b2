// Fresh prompts' causal attention through cuDNN (see prefill_sdpa.h).
#include "core/runner/prefill_sdpa.h"

#include <torch/version.h>

#if defined(TORCH_VERSION_MAJOR) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)) && \
    __has_include(<ATen/ops/scaled_dot_product_attention.h>)
#define LECTOR_PREFILL_SDPA 1
#include <ATen/Context.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#endif

#include "core/common/assert.h"

namespace lector::runner {

#ifdef LECTOR_PREFILL_SDPA
namespace {

// Backends only some libtorch versions have, each with its getter and setter.
template <class C>
constexpr bool kHasFa3 = requires(C& x) { x.setSDPUseFA3(false); x.userEnabledFA3SDP(); };
template <class C>
constexpr bool kHasFa4 = requires(C& x) { x.setSDPUseFA4(false); x.userEnabledFA4SDP(); };
template <class C>
constexpr bool kHasOverrideable = requires(C& x) { x.setSDPUseOverrideable(false); x.userEnabledOverrideableSDP(); };

// Only cuDNN's backend enabled while it lives; the flags as they were after. Backends that only some
// libtorch versions have (FlashAttention 3 and 4, the overrideable one) are switched off where they
// exist: a template, so that a member this version lacks is a substitution failure, not an error.
template <class Context>
class CudnnOnly {
public:
    explicit CudnnOnly(Context& c) : m_c(c)
    {
        m_flash = c.userEnabledFlashSDP();
        m_efficient = c.userEnabledMemEfficientSDP();
        m_math = c.userEnabledMathSDP();
        m_cudnn = c.userEnabledCuDNNSDP();
        c.setSDPUseFlash(false);
        c.setSDPUseMemEfficient(false);
        c.setSDPUseMath(false);
        c.setSDPUseCuDNN(true);
        if constexpr (kHasFa3<Context>) {
            m_fa3 = c.userEnabledFA3SDP();
            c.setSDPUseFA3(false);
        }
        if constexpr (kHasFa4<Context>) {
            m_fa4 = c.userEnabledFA4SDP();
            c.setSDPUseFA4(false);
        }
        if constexpr (kHasOverrideable<Context>) {
            m_overrideable = c.userEnabledOverrideableSDP();
            c.setSDPUseOverrideable(false);
        }
    }
    ~CudnnOnly()
    {
        m_c.setSDPUseFlash(m_flash);
        m_c.setSDPUseMemEfficient(m_efficient);
        m_c.setSDPUseMath(m_math);
        m_c.setSDPUseCuDNN(m_cudnn);
        if constexpr (kHasFa3<Context>) m_c.setSDPUseFA3(m_fa3);
        if constexpr (kHasFa4<Context>) m_c.setSDPUseFA4(m_fa4);
        if constexpr (kHasOverrideable<Context>) m_c.setSDPUseOverrideable(m_overrideable);
    }
    CudnnOnly(const CudnnOnly&) = delete;
    CudnnOnly& operator=(const CudnnOnly&) = delete;

private:
    Context& m_c;
    bool m_flash = true, m_efficient = true, m_math = true, m_cudnn = true, m_fa3 = false, m_fa4 = false,
         m_overrideable = false;
};

}  // namespace

bool prefillSdpaAvailable()
{
    return at::hasCUDA() && at::globalContext().hasCuDNN();
}

void prefillSdpa(const at::Tensor& out, const at::Tensor& qkv, std::int64_t count, std::int64_t len, std::int64_t hq,
                 std::int64_t hk, std::int64_t d, double scale)
{
    LECTOR_ASSERT(count > 0 && len > 0 && qkv.dim() == 2 && qkv.size(0) == count * len && qkv.size(1) == (hq + 2 * hk) * d);
    LECTOR_ASSERT(out.size(0) == count * len && out.numel() == count * len * hq * d);
    // Strided views of the rows: [count, heads, len, d], the head dimension contiguous.
    const at::Tensor x = qkv.view({count, len, hq + 2 * hk, d});
    const at::Tensor q = x.narrow(2, 0, hq).transpose(1, 2);
    const at::Tensor k = x.narrow(2, hq, hk).transpose(1, 2);
    const at::Tensor v = x.narrow(2, hq + hk, hk).transpose(1, 2);
    at::Tensor o;
    {
        CudnnOnly<at::Context> only(at::globalContext());
        o = at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true, scale,
                                             /*enable_gqa=*/true);  // [count, hq, len, d]
    }
    out.view({count, len, hq, d}).copy_(o.transpose(1, 2));
}

#else

bool prefillSdpaAvailable() { return false; }

void prefillSdpa(const at::Tensor&, const at::Tensor&, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                 std::int64_t, double)
{
    LECTOR_ASSERT(!"prefillSdpa: this libtorch has no grouped-query scaled_dot_product_attention");
}

#endif

}  // namespace lector::runner
