#include "core/common/upload.h"

#include <ATen/ATen.h>

namespace lector {

at::Tensor uploadAsync(const at::Tensor& t, at::Device device, at::ScalarType dtype)
{
    if (!t.is_cpu() || !device.is_cuda()) return t.to(device, dtype);
    at::Tensor staged = at::empty(t.sizes(), at::TensorOptions().dtype(dtype).pinned_memory(true));
    staged.copy_(t);
    return staged.to(device, /*non_blocking=*/true);
}

}  // namespace lector
