// Gradient arithmetic of the optimizer step: normalising the summed gradients by the step's
// token count, and torch.nn.utils.clip_grad_norm_'s total L2 norm and clipping.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace fthost {

// grad *= factor for every parameter that has a gradient.
void scale_gradients(const std::vector<at::Tensor>& params, double factor);

// The L2 norm of all gradients together (computed in float32 per tensor, as torch does), and,
// when `max_norm` is finite, every gradient scaled by max_norm / (norm + 1e-6) if that is < 1.
double clip_gradient_norm(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace fthost
