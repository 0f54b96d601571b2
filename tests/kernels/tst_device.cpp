// gpu/device.h's StreamEvent, which the engine waits on to read a step's sampled tokens while the next step
// is queued (runner::DeviceSampler). On the CPU work is synchronous and the event does nothing. On CUDA a
// non-blocking copy to pinned host memory, queued behind milliseconds of work, is there once the event
// recorded after it has been waited for: before the work has run the host would read the buffer's zeros.
#include <ATen/ATen.h>

#include "gpu/device.h"
#include "tests/kernels/kernel_test_util.h"

namespace gpu = lector::gpu;
namespace kt = lector::test::kernels;

LECTOR_TEST(onTheCpuAnEventDoesNothing)
{
    const c10::Device cpu(c10::kCPU);
    gpu::StreamEvent event;
    event.synchronize();  // nothing recorded: returns at once
    event.record(cpu);
    event.synchronize();
    gpu::StreamEvent moved = std::move(event);
    moved.synchronize();
}

LECTOR_TEST(anEventWaitsForTheWorkQueuedBeforeIt)
{
    kt::requireCuda();
    const c10::Device dev(c10::kCUDA, 0);
    // 50 passes over 256 MB of ones (25 GB read and written: milliseconds on any card), then their first
    // elements copied to zeroed pinned host memory without waiting; the host reads it after the event.
    constexpr int64_t kElements = int64_t{1} << 26;
    constexpr int kPasses = 50;
    at::Tensor x = at::ones({kElements}, at::TensorOptions().device(dev));
    at::Tensor host = at::zeros({4}, at::TensorOptions().pinned_memory(true));
    for (int round = 1; round <= 2; ++round) {
        for (int i = 0; i < kPasses; ++i) x.add_(1.0);
        host.copy_(x.slice(0, 0, 4), /*non_blocking=*/true);
        gpu::StreamEvent done;
        done.record(dev);
        done.synchronize();
        const float* v = host.data_ptr<float>();
        for (int i = 0; i < 4; ++i) LECTOR_CHECK_EQ(v[i], float(1 + round * kPasses));
    }
}
