#include "llama4_vision_encoder.h"

#include <ft/errors.h>
#include <ft/nn/attention.h>
#include <ft/nn/clip_mlp.h>
#include <ft/nn/layer_norm.h>
#include <ft/nn/parameter_device.h>
#include <ft/text.h>

#include <ATen/ATen.h>

#include <cmath>
#include <string>
#include <utility>

namespace ft_models {

using namespace ft::nn;

PatchGridRotary::PatchGridRotary(std::int64_t patches_per_side, std::int64_t head_dim, double theta)
    : patches_per_side_(patches_per_side), head_dim_(head_dim), theta_(theta) {
  const at::Tensor float32 = angles(at::kFloat), float64 = angles(at::kDouble);
  cos32_ = float32.cos();
  sin32_ = float32.sin();
  cos64_ = float64.cos();
  sin64_ = float64.sin();
}

at::Tensor PatchGridRotary::angles(c10::ScalarType dtype) const {
  const auto options = at::TensorOptions().dtype(dtype);
  const std::int64_t quarter = head_dim_ / 4, patches = patches_per_side_ * patches_per_side_;
  // Hugging Face: 1 / theta^(arange(0, head_dim / 2, 2) / (head_dim / 2)).
  const at::Tensor exponents = at::arange(0, 2 * quarter, 2, options) / static_cast<double>(head_dim_ / 2);
  const at::Tensor frequencies = at::pow(at::scalar_tensor(theta_, options), exponents).reciprocal();
  const at::Tensor index = at::arange(patches, options.dtype(at::kLong));
  const at::Tensor column = (index.remainder(patches_per_side_) + 1).to(dtype).unsqueeze(1);
  const at::Tensor row = (index.div(patches_per_side_, "floor") + 1).to(dtype).unsqueeze(1);
  const at::Tensor grid = at::cat({column * frequencies, row * frequencies}, 1);
  // The class token, last, is not turned.
  return at::cat({grid, at::zeros({1, 2 * quarter}, options)}, 0);
}

at::Tensor PatchGridRotary::apply(const at::Tensor& x, const at::Tensor&) const {
  const std::int64_t tokens = x.size(1);
  if (tokens != patches_per_side_ * patches_per_side_ + 1 || x.size(3) != head_dim_)
    throw ft::Error("vision rotary embedding: expected " + std::to_string(patches_per_side_ * patches_per_side_ + 1) +
                    " tokens of head width " + std::to_string(head_dim_) + ", got " + ft::shape_text(x.sizes()));
  // Hugging Face turns the pairs in float32 (complex64) whatever the model's dtype.
  const bool wide = x.scalar_type() == at::kDouble;
  const c10::ScalarType compute = wide ? at::kDouble : at::kFloat;
  const at::Tensor cos = (wide ? cos64_ : cos32_).to(x.device()).view({1, tokens, 1, head_dim_ / 2});
  const at::Tensor sin = (wide ? sin64_ : sin32_).to(x.device()).view({1, tokens, 1, head_dim_ / 2});
  const at::Tensor pairs = x.to(compute).unflatten(-1, {head_dim_ / 2, 2});
  const at::Tensor even = pairs.select(-1, 0), odd = pairs.select(-1, 1);
  return at::stack({even * cos - odd * sin, even * sin + odd * cos}, -1).flatten(-2).to(x.scalar_type());
}

namespace {

TransformerLayer encoder_layer(const Llama4VisionConfig& c, const std::shared_ptr<const PatchGridRotary>& rotary) {
  AttentionOptions attention;
  attention.embed_dim = c.hidden_size;
  attention.num_heads = c.num_heads;
  attention.num_kv_heads = c.num_heads;
  attention.head_dim = c.hidden_size / c.num_heads;
  attention.projection_bias = true;
  TransformerLayerParts parts;
  // Hugging Face's LayerNorms keep torch's default eps whatever norm_eps says.
  parts.sa_norm = layer_norm(c.hidden_size, 1e-5);
  parts.attn = Attention(attention, AttentionBlocks{rotary, nullptr, nullptr});
  // The output projection has a bias too, which attention's options do not offer (no decoder
  // has one): registered on it here, where LinearImpl adds it.
  auto& output = *parts.attn->output_proj;
  output.bias = output.register_parameter("bias", at::zeros({c.hidden_size}, parameter_options()));
  parts.mlp_norm = layer_norm(c.hidden_size, 1e-5);
  parts.mlp = clip_mlp(c.hidden_size, c.intermediate_size);
  return TransformerLayer(std::move(parts));
}

}  // namespace

at::Tensor pixel_shuffle(const at::Tensor& x, double ratio) {
  const std::int64_t n = x.size(0), dim = x.size(2);
  const auto side = static_cast<std::int64_t>(std::llround(std::sqrt(static_cast<double>(x.size(1)))));
  const auto scaled = [ratio](std::int64_t v) { return static_cast<std::int64_t>(static_cast<double>(v) * ratio); };
  const auto widened = [ratio](std::int64_t v) { return static_cast<std::int64_t>(static_cast<double>(v) / ratio); };
  // Hugging Face's steps: fold columns into features, transpose, fold rows, transpose back.
  at::Tensor t = x.reshape({n, side, scaled(side), widened(dim)}).permute({0, 2, 1, 3}).contiguous();
  t = t.view({n, scaled(side), scaled(side), widened(widened(dim))}).permute({0, 2, 1, 3}).contiguous();
  return t.view({n, -1, t.size(-1)});
}

Llama4VisionEncoderImpl::Llama4VisionEncoderImpl(const Llama4VisionConfig& config) : config_(config) {
  if (std::string problem = config.problem(); !problem.empty()) throw ft::Error("Llama 4 vision encoder: " + problem);
  const std::int64_t d = config.hidden_size, side = config.patches_per_side();
  patch_embedding =
      register_module("patch_embedding", Linear(config.num_channels * config.patch_size * config.patch_size, d, false));
  class_embedding = register_parameter("class_embedding", at::zeros({d}, parameter_options()));
  positional_embedding =
      register_parameter("positional_embedding_vlm", at::zeros({side * side + 1, d}, parameter_options()));
  layernorm_pre = register_module("layernorm_pre", layer_norm(d, 1e-5));
  layernorm_post = register_module("layernorm_post", layer_norm(d, 1e-5));
  const auto rotary = std::make_shared<const PatchGridRotary>(side, d / config.num_heads, config.rope_theta);
  for (std::int64_t i = 0; i < config.num_layers; ++i)
    layers.push_back(register_module("layers_" + std::to_string(i), encoder_layer(config, rotary)));
  adapter_fc1 = register_module("adapter_fc1", Linear(config.shuffled_dim(), config.projector_input_dim, false));
  adapter_fc2 = register_module("adapter_fc2", Linear(config.projector_output_dim, config.projector_output_dim, false));
}

at::Tensor Llama4VisionEncoderImpl::forward(const at::Tensor& tiles) const {
  at::Tensor x = embed(tiles);
  for (std::size_t i = 0; i < layers.size(); ++i) x = layer(i, x);
  return head(x);
}

at::Tensor Llama4VisionEncoderImpl::embed(const at::Tensor& tiles) const {
  const Llama4VisionConfig& c = config_;
  if (tiles.dim() != 4 || tiles.size(1) != c.num_channels || tiles.size(2) != c.image_size ||
      tiles.size(3) != c.image_size)
    throw ft::Error("Llama 4 vision encoder: tiles must be [n, " + std::to_string(c.num_channels) + ", " +
                    std::to_string(c.image_size) + ", " + std::to_string(c.image_size) + "], got " +
                    ft::shape_text(tiles.sizes()));
  const std::int64_t n = tiles.size(0), d = c.hidden_size, p = c.patch_size;
  const at::Tensor& weight = patch_embedding->weight;
  // Hugging Face unfolds each patch channel by channel, row by row: the linear map is a
  // convolution with stride patch_size.
  at::Tensor x = at::conv2d(tiles.to(weight.scalar_type()), weight.view({d, c.num_channels, p, p}), {}, p);
  x = x.flatten(2).transpose(1, 2);
  x = at::cat({x, class_embedding.expand({n, 1, d})}, 1) + positional_embedding;
  return layernorm_pre->forward(x);
}

at::Tensor Llama4VisionEncoderImpl::layer(std::size_t index, const at::Tensor& x) const {
  const std::int64_t tokens = x.size(1);
  // Every token sees every other.
  const at::Tensor everything = at::ones({tokens, tokens}, x.options().dtype(at::kBool));
  const at::Tensor positions = at::arange(tokens, x.options().dtype(at::kLong));
  return layers.at(index)->forward(x, positions, everything);
}

at::Tensor Llama4VisionEncoderImpl::head(const at::Tensor& x) const {
  const at::Tensor patches = layernorm_post->forward(x).narrow(1, 0, x.size(1) - 1);
  const at::Tensor shuffled = pixel_shuffle(patches, config_.pixel_shuffle_ratio);
  return at::gelu(adapter_fc2->forward(at::gelu(adapter_fc1->forward(shuffled))));
}

}  // namespace ft_models
