#include "bitsandbytes_adam_update.h"

#include "bitsandbytes_step_constants.h"
#include "cuda/bitsandbytes_adam_cuda.h"
#include "dynamic_quantization.h"

#include <ft/errors.h>

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace ftoptim {

namespace {

using StepConstants = BitsAndBytesStepConstants;

template <class Param, class Grad>
void update_8bit(Param* p, const Grad* g, std::uint8_t* s1, std::uint8_t* s2, float* absmax1, float* absmax2,
                 std::int64_t n, const StepConstants& c) {
  const CodeLookup& signed_codes = CodeLookup::of(true);
  const CodeLookup& unsigned_codes = CodeLookup::of(false);
  const QuantizationMap& signed_map = signed_codes.map();
  const QuantizationMap& unsigned_map = unsigned_codes.map();
  const std::int64_t blocks = (n + kQuantizationBlock - 1) / kQuantizationBlock;
  at::parallel_for(0, blocks, 16, [&](std::int64_t first, std::int64_t last) {
    float m[kQuantizationBlock], v[kQuantizationBlock];
    for (std::int64_t b = first; b < last; ++b) {
      const std::int64_t begin = b * kQuantizationBlock, end = std::min(n, begin + kQuantizationBlock);
      float max1 = 0.0f, max2 = 0.0f;
      for (std::int64_t i = begin; i < end; ++i) {
        const std::int64_t k = i - begin;
        const float grad = static_cast<float>(g[i]) * c.scale;
        m[k] = signed_map[s1[i]] * absmax1[b] * c.beta1 + c.one_minus_beta1 * grad;
        v[k] = unsigned_map[s2[i]] * absmax2[b] * c.beta2 + c.one_minus_beta2 * grad * grad;
        const float denom = std::sqrt(v[k]) / c.correction2 + c.eps;
        float param = static_cast<float>(p[i]);
        if (c.decays) param *= c.decay;
        p[i] = static_cast<Param>(param + c.step_size * (m[k] / denom));
        max1 = std::max(max1, std::fabs(m[k]));
        max2 = std::max(max2, std::fabs(v[k]));
      }
      absmax1[b] = max1;
      absmax2[b] = max2;
      // Scaled by the reciprocal: a multiply per value instead of a division (the code can differ
      // only for a value within a rounding of the midpoint between two).
      const float inverse1 = max1 > 0.0f ? 1.0f / max1 : 0.0f, inverse2 = max2 > 0.0f ? 1.0f / max2 : 0.0f;
      for (std::int64_t i = begin; i < end; ++i) {
        const std::int64_t k = i - begin;
        s1[i] = signed_codes.nearest(m[k] * inverse1);
        s2[i] = unsigned_codes.nearest(v[k] * inverse2);
      }
    }
  });
}

template <class Param, class Grad>
void update_32bit(Param* p, const Grad* g, float* m, float* v, std::int64_t n, const StepConstants& c) {
  // bitsandbytes' 32-bit form: step_size -lr * c2 / c1 on m / (sqrt(v) + eps * c2).
  const float step_size = c.step_size * c.correction2, eps = c.eps * c.correction2;
  at::parallel_for(0, n, 4096, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t i = first; i < last; ++i) {
      const float grad = static_cast<float>(g[i]) * c.scale;
      m[i] = m[i] * c.beta1 + c.one_minus_beta1 * grad;
      v[i] = v[i] * c.beta2 + c.one_minus_beta2 * grad * grad;
      float param = static_cast<float>(p[i]);
      if (c.decays) param *= c.decay;
      p[i] = static_cast<Param>(param + (m[i] / (std::sqrt(v[i]) + eps)) * step_size);
    }
  });
}

void check_contiguous(const at::Tensor& t, const char* what, const at::Device& device) {
  if (!t.is_contiguous() || t.device() != device)
    throw ft::Error(std::string("bitsandbytes Adam update: ") + what + " must be a contiguous tensor on " +
                    device.str() + ", as the parameter is");
}

// Calls `f(param_ptr, grad_ptr)` with the pointers' element types: float or bfloat16 each.
template <class F>
void with_types(const at::Tensor& param, const at::Tensor& grad, F f) {
  auto with_grad = [&](auto* p) {
    if (grad.scalar_type() == at::kFloat) return f(p, grad.data_ptr<float>());
    if (grad.scalar_type() == at::kBFloat16) return f(p, grad.data_ptr<c10::BFloat16>());
    throw ft::Error(std::string("bitsandbytes Adam update: gradients of dtype ") + c10::toString(grad.scalar_type()) +
                    " (float32 and bfloat16 are supported)");
  };
  if (param.scalar_type() == at::kFloat) return with_grad(param.data_ptr<float>());
  if (param.scalar_type() == at::kBFloat16) return with_grad(param.data_ptr<c10::BFloat16>());
  throw ft::Error(std::string("bitsandbytes Adam update: parameters of dtype ") + c10::toString(param.scalar_type()) +
                  " (float32 and bfloat16 are supported)");
}

}  // namespace

void adam_8bit_blockwise_update(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& state1,
                                const at::Tensor& state2, const at::Tensor& absmax1, const at::Tensor& absmax2,
                                std::int64_t step, const AdamHyperparameters& h, double gradient_scale) {
  for (const auto& [t, what] : {std::pair{&param, "the parameter"},
                                {&grad, "the gradient"},
                                {&state1, "state1"},
                                {&state2, "state2"},
                                {&absmax1, "absmax1"},
                                {&absmax2, "absmax2"}})
    check_contiguous(*t, what, param.device());
  const StepConstants c = bitsandbytes_step_constants(step, h, gradient_scale);
  if (param.is_cuda())
    return adam_8bit_blockwise_update_cuda(param, grad, state1, state2, absmax1, absmax2, c, dynamic_map(true).data(),
                                           dynamic_map(false).data());
  with_types(param, grad, [&](auto* p, const auto* g) {
    update_8bit(p, g, state1.data_ptr<std::uint8_t>(), state2.data_ptr<std::uint8_t>(), absmax1.data_ptr<float>(),
                absmax2.data_ptr<float>(), param.numel(), c);
  });
}

void adam_32bit_update(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& state1,
                       const at::Tensor& state2, std::int64_t step, const AdamHyperparameters& h,
                       double gradient_scale) {
  for (const auto& [t, what] :
       {std::pair{&param, "the parameter"}, {&grad, "the gradient"}, {&state1, "state1"}, {&state2, "state2"}})
    check_contiguous(*t, what, param.device());
  const StepConstants c = bitsandbytes_step_constants(step, h, gradient_scale);
  if (param.is_cuda()) return adam_32bit_update_cuda(param, grad, state1, state2, c);
  with_types(param, grad, [&](auto* p, const auto* g) {
    update_32bit(p, g, state1.data_ptr<float>(), state2.data_ptr<float>(), param.numel(), c);
  });
}

}  // namespace ftoptim
