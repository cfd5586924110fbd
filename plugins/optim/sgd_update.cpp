#include "sgd_update.h"

#include "elementwise_storage.h"

namespace ftoptim {
namespace {

template <class Stored>
void sgd_range(Stored* p, const Stored* g, Stored* buf, bool first_step, std::int64_t begin, std::int64_t end,
               const SgdHyperparameters& h) {
  using C = ComputeType<Stored>;
  const C lr = static_cast<C>(h.lr), momentum = static_cast<C>(h.momentum);
  const C one_minus_dampening = static_cast<C>(1 - h.dampening), l2 = static_cast<C>(h.weight_decay);
  for (std::int64_t i = begin; i < end; ++i) {
    const C param = static_cast<C>(p[i]);
    C direction = static_cast<C>(g[i]);
    if (h.weight_decay != 0) direction += l2 * param;
    if (buf) {
      const C velocity = first_step ? direction : momentum * static_cast<C>(buf[i]) + one_minus_dampening * direction;
      buf[i] = static_cast<Stored>(velocity);
      direction = h.nesterov ? direction + momentum * velocity : velocity;
    }
    p[i] = static_cast<Stored>(param - lr * direction);
  }
}

}  // namespace

void sgd_update(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& momentum_buffer, bool first_step,
                const SgdHyperparameters& h) {
  if (!param.is_contiguous()) throw ft::Error("optimizer: a parameter is not contiguous");
  require_like(param, grad, "gradient");
  const bool with_momentum = h.momentum != 0;
  if (with_momentum) require_like(param, momentum_buffer, "momentum_buffer state");
  dispatch_stored_type(param, [&](auto stored) {
    using Stored = decltype(stored);
    Stored* p = param.data_ptr<Stored>();
    const Stored* g = grad.data_ptr<Stored>();
    Stored* buf = with_momentum ? momentum_buffer.data_ptr<Stored>() : nullptr;
    at::parallel_for(0, param.numel(), kGrainSize,
                     [&](std::int64_t begin, std::int64_t end) { sgd_range(p, g, buf, first_step, begin, end, h); });
  });
}

}  // namespace ftoptim
