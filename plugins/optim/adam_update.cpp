#include "adam_update.h"

#include "elementwise_storage.h"
#include "update_kernels.h"

namespace ftoptim {

void adam_update(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& exp_avg,
                 const at::Tensor& exp_avg_sq, const at::Tensor& max_exp_avg_sq, std::int64_t step,
                 const AdamHyperparameters& h, double gradient_scale) {
  if (!param.is_contiguous()) throw ft::Error("optimizer: a parameter is not contiguous");
  require_like(param, grad, "gradient");
  require_like(param, exp_avg, "exp_avg state");
  require_like(param, exp_avg_sq, "exp_avg_sq state");
  if (h.amsgrad) require_like(param, max_exp_avg_sq, "max_exp_avg_sq state");
  dispatch_stored_type(param, [&](auto stored) {
    using Stored = decltype(stored);
    Stored* p = param.data_ptr<Stored>();
    const Stored* g = grad.data_ptr<Stored>();
    Stored* m = exp_avg.data_ptr<Stored>();
    Stored* v = exp_avg_sq.data_ptr<Stored>();
    Stored* vmax = h.amsgrad ? max_exp_avg_sq.data_ptr<Stored>() : nullptr;
    const bool avx2 = update_kernels_use_avx2();
    at::parallel_for(0, param.numel(), kGrainSize, [&](std::int64_t begin, std::int64_t end) {
      if (avx2)
        avx2::adam_range(p, g, m, v, vmax, begin, end, step, h, gradient_scale);
      else
        baseline::adam_range(p, g, m, v, vmax, begin, end, step, h, gradient_scale);
    });
  });
}

}  // namespace ftoptim
