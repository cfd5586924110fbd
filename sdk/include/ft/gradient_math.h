// Gradient arithmetic shared by the parallelism strategies: torch.nn.utils.clip_grad_norm_'s
// norm and clipping, split so a sharded strategy can sum the squares across ranks in between.
#pragma once

#include <ft/export.h>

#include <ATen/core/Tensor.h>

#include <vector>

namespace ft {

// grad *= factor for every tensor that has a gradient.
FT_API void scale_gradients(const std::vector<at::Tensor>& tensors, double factor);

// Sum over tensors of the squared L2 norm of their gradient (each norm computed in float32, as
// torch does).
FT_API double gradient_norm_squared(const std::vector<at::Tensor>& tensors);

// When `max_norm` is finite: grad *= max_norm / (total_norm + 1e-6) if that factor is < 1.
FT_API void clip_gradients(const std::vector<at::Tensor>& tensors, double total_norm, double max_norm);

// Both steps for gradients that are whole on this rank (one rank, or replicated): returns the
// norm before clipping.
FT_API double clip_grad_norm(const std::vector<at::Tensor>& tensors, double max_norm);

}  // namespace ft
