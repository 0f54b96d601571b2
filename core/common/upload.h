// uploadAsync(): a host tensor copied to a device without the host waiting.
// libtorch's plain .to(device) from pageable host memory synchronises the device's current stream: the
// host waits for everything queued there first (with the vision tower's work queued on a stream of its
// own, for the whole tower). Staged through pinned memory, the copy is only queued.
#pragma once

#include <ATen/core/Tensor.h>

namespace lector {

// `t` on `device` in `dtype`. From host memory to a GPU: converted into a pinned buffer (the conversion
// rounds as the device's would), then copied asynchronously on the device's current stream; the caching host
// allocator keeps the buffer until that copy has run, so `t` may go as soon as this returns. Anything else
// (a CPU device, a tensor already on a device): t.to(device, dtype).
at::Tensor uploadAsync(const at::Tensor& t, at::Device device, at::ScalarType dtype);
inline at::Tensor uploadAsync(const at::Tensor& t, at::Device device) { return uploadAsync(t, device, t.scalar_type()); }

}  // namespace lector
