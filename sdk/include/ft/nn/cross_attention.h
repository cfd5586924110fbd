// Attention of a decoder's positions over an encoder's states (Llama 3.2 Vision's fusion layers):
// queries from the text, keys and values from the encoder's output, grouped-query heads, optional
// per-head q/k norms, no positions. Which encoder states each text position sees is a bool mask.
#pragma once

#include <ft/nn/linear.h>
#include <ft/nn/norm.h>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>

namespace ft::nn {

struct CrossAttentionOptions {
  std::int64_t embed_dim = 0;    // the decoder's width: queries' input and the output
  std::int64_t encoder_dim = 0;  // the encoder states' width: keys' and values' input
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;  // grouped-query attention: num_heads is a multiple of it
  std::int64_t head_dim = 0;

  // Empty when consistent, else what is wrong.
  std::string problem() const;
};

class CrossAttentionImpl : public torch::nn::Module {
 public:
  // q_norm and k_norm: over each head's queries / keys, both or neither (nullptr).
  CrossAttentionImpl(const CrossAttentionOptions& options, Norm q_norm, Norm k_norm);
  // x: [b, s, embed_dim]; encoder: [b, n, encoder_dim]; allowed: [b, s, n] bool, true = may
  // attend. A position allowed no encoder state gets zeros (not the NaN a softmax over nothing
  // gives), and so does its gradient.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& encoder, const at::Tensor& allowed) const;
  const CrossAttentionOptions& options() const { return options_; }
  Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, output_proj{nullptr};
  Norm q_norm, k_norm;

 private:
  CrossAttentionOptions options_;
};
TORCH_MODULE(CrossAttention);

// [b, s, 1] in `dtype`: 1 where a text position may attend to some encoder state, 0 where
// `allowed` [b, s, n] gives it none (the rows a fusion layer leaves unchanged).
at::Tensor rows_with_any_key(const at::Tensor& allowed, c10::ScalarType dtype);

}  // namespace ft::nn
