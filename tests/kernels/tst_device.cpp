// gpu/device.h's streams and matrix-product SM target. On the CPU the streams are the caller's (work runs
// at once) and no SM target is set. On CUDA: a SideStream's work sees everything the current stream queued
// before the stream was made (pool streams do not wait for the legacy default stream by themselves), an
// event recorded on it marks that work, another stream made to wait for an event (block) sees that work,
// timing events measure the work between them, and MatmulSmTarget is set and leaves the products' values
// alone.
#include <ATen/ATen.h>

#include <optional>
#include <stdexcept>

#include "gpu/device.h"
#include "tests/kernels/kernel_test_util.h"

namespace gpu = lector::gpu;
namespace kt = lector::test::kernels;

namespace {

// Milliseconds of work for the CUDA cases: kPasses passes over 256 MB of ones, queued on the current stream.
constexpr int64_t kElements = int64_t{1} << 26;
constexpr int kPasses = 50;
void queuePasses(at::Tensor& x)
{
    for (int i = 0; i < kPasses; ++i) x.add_(1.0);
}

}  // namespace

LECTOR_TEST(onTheCpuTheStreamsAreTheCallers)
{
    const c10::Device cpu(c10::kCPU);
    gpu::SideStream side(cpu, gpu::StreamPriority::High);
    int ran = 0;
    side.run([&] { ++ran; });
    LECTOR_CHECK_EQ(ran, 1);
    gpu::StreamEvent event, timed(/*timing=*/true);
    event.record(cpu);
    timed.record(cpu);
    LECTOR_CHECK(event.ready());
    event.block(cpu);
    LECTOR_CHECK(!gpu::StreamEvent::elapsedMs(timed, timed).has_value());  // nothing to measure on the CPU
    side.synchronize();
    bool threw = false;
    try {
        side.run([] { throw std::runtime_error("body failed"); });
    } catch (const std::runtime_error&) {
        threw = true;
    }
    LECTOR_CHECK(threw);
    const gpu::MatmulSmTarget target(cpu, 66);
    LECTOR_CHECK(!target.active());
}

LECTOR_TEST(aSideStreamStartsAfterTheWorkQueuedBeforeIt)
{
    kt::requireCuda();
    const c10::Device dev(c10::kCUDA, 0);
    // ~50 passes over 256 MB queued on the current stream (milliseconds of work), then a stream made and a
    // sum queued on it at once: it must see every pass.
    at::Tensor x = at::ones({kElements}, at::TensorOptions().device(dev));
    queuePasses(x);
    gpu::SideStream side(dev, gpu::StreamPriority::Low);
    at::Tensor sum;
    gpu::StreamEvent done;
    side.run([&] {
        sum = x.sum(at::kDouble);
        done.record(dev);
    });
    done.synchronize();
    LECTOR_CHECK(done.ready());
    LECTOR_CHECK_EQ(sum.item<double>(), double(kElements) * (kPasses + 1));
    // The same with a stream of high priority, after more work.
    queuePasses(x);
    gpu::SideStream high(dev, gpu::StreamPriority::High);
    high.run([&] { sum = x.sum(at::kDouble); });
    high.synchronize();
    LECTOR_CHECK_EQ(sum.item<double>(), double(kElements) * (2 * kPasses + 1));
}

LECTOR_TEST(aStreamMadeToWaitForAnEventSeesItsWork)
{
    kt::requireCuda();
    const c10::Device dev(c10::kCUDA, 0);
    // Milliseconds of work on a side stream, marked by an event; the current stream waits for the event on the
    // device (the host does not), then sums: it must see every pass.
    at::Tensor x = at::ones({kElements}, at::TensorOptions().device(dev));
    gpu::SideStream side(dev, gpu::StreamPriority::Low);
    gpu::StreamEvent done(/*timing=*/true), start(/*timing=*/true);
    side.run([&] {
        start.record(dev);
        queuePasses(x);
        done.record(dev);
    });
    done.block(dev);
    const at::Tensor sum = x.sum(at::kDouble);  // on the current stream, after the wait
    gpu::StreamEvent summed(/*timing=*/true);
    summed.record(dev);
    summed.synchronize();
    LECTOR_CHECK(done.ready());
    LECTOR_CHECK_EQ(sum.item<double>(), double(kElements) * (kPasses + 1));
    // Timing events on two streams measure the work between them; an event without timing measures nothing.
    const std::optional<double> passes = gpu::StreamEvent::elapsedMs(start, done);
    const std::optional<double> after = gpu::StreamEvent::elapsedMs(done, summed);
    LECTOR_CHECK(passes.has_value() && after.has_value());
    // 50 passes read and write 256 MB each (25 GB): well over a millisecond on any card, under 10 s.
    LECTOR_CHECK(*passes > 1.0 && *passes < 10000.0);
    LECTOR_CHECK(*after >= 0.0);
    gpu::StreamEvent untimed;
    untimed.record(dev);
    untimed.synchronize();
    LECTOR_CHECK(!gpu::StreamEvent::elapsedMs(start, untimed).has_value());
}

LECTOR_TEST(anSmTargetIsSetAndLeavesProductsAlone)
{
    kt::requireCuda();
    const c10::Device dev(c10::kCUDA, 0);
    const auto options = at::TensorOptions().device(dev).dtype(at::kHalf);
    const at::Tensor a = at::randn({4096, 1152}, kt::generator(3)).to(options);
    const at::Tensor w = at::randn({3456, 1152}, kt::generator(4)).to(options).mul_(0.03);
    const at::Tensor b = at::randn({3456}, kt::generator(5)).to(options);
    const at::Tensor whole = at::linear(a, w, b).to(at::kFloat), plain = at::mm(a, w.t()).to(at::kFloat);
    {
        const gpu::MatmulSmTarget target(dev, 66);
        LECTOR_CHECK_MSG(target.active(), "neither libtorch's carve-out nor cuBLAS's SM target could be set");
        const at::Tensor part = at::linear(a, w, b).to(at::kFloat), partPlain = at::mm(a, w.t()).to(at::kFloat);
        // Another plan may sum in another order: float16 outputs of sums of 1152 products agree to a few ulps.
        LECTOR_CHECK(at::allclose(part, whole, /*rtol=*/1e-2, /*atol=*/1e-2));
        LECTOR_CHECK(at::allclose(partPlain, plain, 1e-2, 1e-2));
    }
    const gpu::MatmulSmTarget none(dev, 0);
    LECTOR_CHECK(!none.active());
}
