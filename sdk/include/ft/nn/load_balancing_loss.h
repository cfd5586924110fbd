// The auxiliary load-balancing loss of a mixture of experts, as Hugging Face's
// load_balancing_loss_func computes it (Switch Transformer, eqs. 4-6): over the router logits of
// every sparse layer taken together, num_experts x sum over experts of (the fraction of token
// choices that went to the expert) x (its mean softmax probability).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace ft::nn {

// router_logits: one [tokens, experts] tensor per sparse layer. A float32 scalar; zero when
// there are none.
at::Tensor load_balancing_loss(const std::vector<at::Tensor>& router_logits, std::int64_t num_experts,
                               std::int64_t top_k);

}  // namespace ft::nn
