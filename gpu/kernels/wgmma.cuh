// Hopper's warp-group matrix products (wgmma) over shared-memory tiles: the pieces the sm_90a kernels
// share (the vision tower's attention, the skinny GEMM's warp-group engine).
//
// Without swizzle (the vision attention), a K-major operand tile is stored as 16-byte chunks of 8
// k-elements: core matrix = 8 rows x 16 bytes, 128 contiguous bytes. A descriptor names the tile's start,
// the byte distance between core matrices along K ("leading") and along M/N ("stride"); a swizzled tile
// also sets the layout bits (skinny_gemm_wg.cu, swizzledDescriptor).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

// The wgmma code exists only in the sm_90a pass (wgmma needs the arch-specific target).
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LECTOR_HAVE_WGMMA 1
#endif

namespace lector::gpu::wgmma {

__device__ __forceinline__ uint64_t smemDescriptor(uint32_t addr, uint32_t leadingBytes, uint32_t strideBytes)
{
    return uint64_t((addr & 0x3FFFFu) >> 4) | uint64_t(leadingBytes >> 4) << 16 | uint64_t(strideBytes >> 4) << 32;
}

__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N of the warp group's committed wgmma groups are in flight.
template <int N>
__device__ __forceinline__ void wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

// Makes this thread's generic-proxy shared-memory writes (cp.async, stores) visible to wgmma's reads.
__device__ __forceinline__ void fenceAsyncProxy() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Keeps the compiler from moving reads or writes of accumulators across a wgmma wait: the asynchronous
// products own those registers until the wait returns.
template <int N>
__device__ __forceinline__ void pinRegisters(float (&r)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// The operand lists (one "+f" per accumulator register) of m64n16, m64n32 and m64n64.
#define LECTOR_WGMMA_D8_REGS "%0, %1, %2, %3, %4, %5, %6, %7"
#define LECTOR_WGMMA_D8_OPERANDS "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define LECTOR_WGMMA_D16_REGS LECTOR_WGMMA_D8_REGS ", %8, %9, %10, %11, %12, %13, %14, %15"
#define LECTOR_WGMMA_D16_OPERANDS LECTOR_WGMMA_D8_OPERANDS, "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define LECTOR_WGMMA_D32_REGS LECTOR_WGMMA_D16_REGS ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define LECTOR_WGMMA_D32_OPERANDS LECTOR_WGMMA_D16_OPERANDS, "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

// d (+)= A B for one wgmma.m64nNk16 of 16-bit T (N = 16, 32 or 64: N / 2 accumulators a thread), A and
// B both K-major shared-memory tiles; scaleD == 0 overwrites d.
#define LECTOR_WGMMA_SS_ASM(N, TYPE, REGS, A, B, S)                                                   \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %" S ", 0;\n"                                                   \
    "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" REGS "}, %" A ", %" B ", p, 1, 1, 0, 0;\n}\n"

// The product for one N in both 16-bit types: D names the operand list, A / B / S the operand numbers of
// the two descriptors and scaleD after it.
#define LECTOR_WGMMA_SS(N, D, A, B, S)                                                                       \
    if constexpr (std::is_same_v<T, __half>)                                                                 \
        asm volatile(LECTOR_WGMMA_SS_ASM(N, "f16", LECTOR_WGMMA_D##D##_REGS, A, B, S)                        \
                     : LECTOR_WGMMA_D##D##_OPERANDS : "l"(descA), "l"(descB), "r"(scaleD));                  \
    else                                                                                                     \
        asm volatile(LECTOR_WGMMA_SS_ASM(N, "bf16", LECTOR_WGMMA_D##D##_REGS, A, B, S)                       \
                     : LECTOR_WGMMA_D##D##_OPERANDS : "l"(descA), "l"(descB), "r"(scaleD));

template <class T, int N>
__device__ __forceinline__ void mmaSS(float (&d)[N / 2], uint64_t descA, uint64_t descB, int scaleD)
{
    static_assert(N == 16 || N == 32 || N == 64);
#ifdef LECTOR_HAVE_WGMMA
    if constexpr (N == 16) {
        LECTOR_WGMMA_SS(16, 8, "8", "9", "10")
    } else if constexpr (N == 32) {
        LECTOR_WGMMA_SS(32, 16, "16", "17", "18")
    } else {
        LECTOR_WGMMA_SS(64, 32, "32", "33", "34")
    }
#else
    (void)d, (void)descA, (void)descB, (void)scaleD;
#endif
}

}  // namespace lector::gpu::wgmma
