#include "sgd_update.h"

#include "elementwise_storage.h"
#include "update_kernels.h"

namespace ftoptim {

void sgd_update(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& momentum_buffer, bool first_step,
                const SgdHyperparameters& h, double gradient_scale) {
  if (!param.is_contiguous()) throw ft::Error("optimizer: a parameter is not contiguous");
  require_like(param, grad, "gradient");
  const bool with_momentum = h.momentum != 0;
  if (with_momentum) require_like(param, momentum_buffer, "momentum_buffer state");
  dispatch_stored_type(param, [&](auto stored) {
    using Stored = decltype(stored);
    Stored* p = param.data_ptr<Stored>();
    const Stored* g = grad.data_ptr<Stored>();
    Stored* buf = with_momentum ? momentum_buffer.data_ptr<Stored>() : nullptr;
    const bool avx2 = update_kernels_use_avx2();
    at::parallel_for(0, param.numel(), kGrainSize, [&](std::int64_t begin, std::int64_t end) {
      if (avx2)
        avx2::sgd_range(p, g, buf, first_step, begin, end, h, gradient_scale);
      else
        baseline::sgd_range(p, g, buf, first_step, begin, end, h, gradient_scale);
    });
  });
}

}  // namespace ftoptim
