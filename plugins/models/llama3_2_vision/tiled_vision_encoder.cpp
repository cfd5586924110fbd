#include "tiled_vision_encoder.h"

#include <ft/errors.h>
#include <ft/nn/attention.h>
#include <ft/nn/clip_mlp.h>
#include <ft/nn/layer_norm.h>
#include <ft/nn/parameter_device.h>
#include <ft/nn/tanh_gate.h>
#include <ft/text.h>

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace ft_models {

using namespace ft::nn;

TileEmbeddingImpl::TileEmbeddingImpl(std::int64_t max_aspect_ratio_id, std::int64_t max_num_tiles, std::int64_t dim) {
  embedding =
      register_parameter("embedding", at::zeros({max_aspect_ratio_id + 1, max_num_tiles * dim}, parameter_options()));
  gate = register_parameter("gate", at::zeros({1}, parameter_options()));
}

at::Tensor TileEmbeddingImpl::forward(const at::Tensor& x, const at::Tensor& aspect_ratio_ids) const {
  return x + at::embedding(embedding, aspect_ratio_ids).view({x.size(0), x.size(1), 1, x.size(3)}) * gate.tanh();
}

namespace {

TransformerLayer encoder_layer(const TiledVisionConfig& c, bool gated) {
  AttentionOptions attention;
  attention.embed_dim = c.hidden_size;
  attention.num_heads = c.num_heads;
  attention.num_kv_heads = c.num_heads;
  attention.head_dim = c.hidden_size / c.num_heads;
  TransformerLayerParts parts;
  parts.sa_norm = layer_norm(c.hidden_size, c.norm_eps);
  // No positions in attention: the embeddings carry them. The mask each forward passes decides
  // what attends to what (every token to every other but padding to padding).
  parts.attn = Attention(attention, AttentionBlocks{});
  // Hugging Face initialises the global layers' gates at pi/4.
  if (gated) parts.sa_scale = tanh_gate(M_PI / 4);
  parts.mlp_norm = layer_norm(c.hidden_size, c.norm_eps);
  parts.mlp = clip_mlp(c.hidden_size, c.intermediate_size);
  if (gated) parts.mlp_scale = tanh_gate(M_PI / 4);
  return TransformerLayer(std::move(parts));
}

}  // namespace

TiledVisionEncoderImpl::TiledVisionEncoderImpl(const TiledVisionConfig& config) : config_(config) {
  if (std::string problem = config.problem(); !problem.empty()) throw ft::Error("vision encoder: " + problem);
  const std::int64_t d = config.hidden_size, tokens = config.tokens_per_tile(), ids = config.max_aspect_ratio_id();
  const auto options = parameter_options();
  patch_embedding = register_parameter(
      "patch_embedding", at::zeros({d, config.num_channels, config.patch_size, config.patch_size}, options));
  class_embedding = register_parameter("class_embedding", at::zeros({d}, options));
  position_gate = register_parameter("position_gate", at::zeros({1}, options));
  position_embedding = register_parameter("position_embedding", at::zeros({tokens, d}, options));
  tile_position_embedding =
      register_parameter("tile_position_embedding", at::zeros({ids + 1, config.max_num_tiles * tokens * d}, options));
  pre_tile_embedding = register_module("pre_tile_embedding", TileEmbedding(ids, config.max_num_tiles, d));
  post_tile_embedding = register_module("post_tile_embedding", TileEmbedding(ids, config.max_num_tiles, d));
  // Hugging Face's two outer LayerNorms keep torch's default eps whatever norm_eps says.
  layernorm_pre = register_module("layernorm_pre", layer_norm(d, 1e-5));
  layernorm_post = register_module("layernorm_post", layer_norm(d, 1e-5));
  for (std::int64_t i = 0; i < config.num_layers; ++i)
    layers.push_back(register_module("layers_" + std::to_string(i), encoder_layer(config, false)));
  for (std::int64_t i = 0; i < config.num_global_layers; ++i)
    global_layers.push_back(register_module("global_layers_" + std::to_string(i), encoder_layer(config, true)));
}

at::Tensor tile_padding_bias(const at::Tensor& tile_mask, std::int64_t tokens_per_tile, std::int64_t padded_tokens,
                             c10::ScalarType dtype) {
  const std::int64_t images = tile_mask.size(0), tiles = tile_mask.size(1);
  const auto real_token = at::arange(padded_tokens, tile_mask.options().dtype(at::kLong)).lt(tokens_per_tile);
  const at::Tensor real =
      tile_mask.ne(0).unsqueeze(-1).logical_and(real_token).reshape({images, tiles * padded_tokens});
  const at::Tensor padding = real.logical_not();
  const at::Tensor both_padding = padding.unsqueeze(2).logical_and(padding.unsqueeze(1));
  const double lowest = dtype == at::kDouble     ? std::numeric_limits<double>::lowest()
                        : dtype == at::kBFloat16 ? -3.3895313892515355e38
                        : dtype == at::kHalf     ? -65504.0
                                                 : static_cast<double>(std::numeric_limits<float>::lowest());
  return at::zeros(both_padding.sizes(), tile_mask.options().dtype(dtype)).masked_fill(both_padding, lowest);
}

at::Tensor TiledVisionEncoderImpl::forward(const at::Tensor& pixels, const at::Tensor& aspect_ratio_ids,
                                           const at::Tensor& tile_mask) const {
  const TiledVisionConfig& c = config_;
  if (pixels.dim() != 6 || pixels.size(3) != c.num_channels || pixels.size(4) != c.image_size ||
      pixels.size(5) != c.image_size || pixels.size(2) > c.max_num_tiles)
    throw ft::Error("vision encoder: images must be [batch, images, tiles <= " + std::to_string(c.max_num_tiles) +
                    ", " + std::to_string(c.num_channels) + ", " + std::to_string(c.image_size) + ", " +
                    std::to_string(c.image_size) + "], got " + ft::shape_text(pixels.sizes()));
  const std::int64_t batch = pixels.size(0), per_sample = pixels.size(1), tiles = pixels.size(2);
  const std::int64_t images = batch * per_sample, d = c.hidden_size, tokens = c.tokens_per_tile();
  if (aspect_ratio_ids.sizes() != at::IntArrayRef{batch, per_sample} ||
      tile_mask.sizes() != at::IntArrayRef{batch, per_sample, tiles})
    throw ft::Error("vision encoder: aspect-ratio ids " + ft::shape_text(aspect_ratio_ids.sizes()) + " and tile mask " +
                    ft::shape_text(tile_mask.sizes()) + " do not match images " + ft::shape_text(pixels.sizes()));
  // The published model always sees max_num_tiles tiles per image (Hugging Face's processor pads
  // to them, and padding tiles take part in attention), whatever the batch was padded to: fewer
  // are padded here with zero tiles, and dropped again from the output.
  if (tiles < c.max_num_tiles) {
    const std::int64_t missing = c.max_num_tiles - tiles;
    at::Tensor padded_pixels = at::constant_pad_nd(pixels, {0, 0, 0, 0, 0, 0, 0, missing});
    at::Tensor padded_mask = at::constant_pad_nd(tile_mask, {0, missing});
    return forward(padded_pixels, aspect_ratio_ids, padded_mask).narrow(2, 0, tiles);
  }
  const at::Tensor ids = aspect_ratio_ids.reshape({images});
  const c10::ScalarType dtype = patch_embedding.scalar_type();

  at::Tensor x = at::conv2d(pixels.reshape({images * tiles, c.num_channels, c.image_size, c.image_size}).to(dtype),
                            patch_embedding, {}, c.patch_size);
  x = x.flatten(2).transpose(1, 2).reshape({images, tiles, tokens - 1, d});
  x = pre_tile_embedding->forward(x, ids);
  x = at::cat({class_embedding.expand({images, tiles, 1, d}), x}, 2);
  const at::Tensor gate = position_gate.tanh();
  x = x + (1 - gate) * position_embedding.view({1, 1, tokens, d});
  x = x + gate * at::embedding(tile_position_embedding, ids).view({images, tiles, tokens, d});
  x = layernorm_pre->forward(x);

  // Each tile's tokens padded to a multiple of 8 (1601 -> 1608 for 448-pixel tiles), as Meta's
  // encoder does: the padding takes part in attention (see tile_padding_bias) and so changes
  // the output; it is dropped at the end.
  const std::int64_t padded = (tokens + 7) / 8 * 8;
  x = at::constant_pad_nd(x, {0, 0, 0, padded - tokens}).reshape({images, tiles * padded, d});
  const at::Tensor bias = tile_padding_bias(tile_mask.reshape({images, tiles}), tokens, padded, dtype);

  std::vector<at::Tensor> outputs;  // of each local layer
  for (std::size_t i = 0; i < layers.size(); ++i) {
    x = run_layer(i, layers[i], x, bias);
    outputs.push_back(x);
  }
  // In intermediate_layers_indices' order, as Hugging Face picks them.
  std::vector<at::Tensor> intermediate;
  for (const std::int64_t wanted : c.intermediate_layers)
    intermediate.push_back(outputs[static_cast<std::size_t>(wanted)]);
  x = layernorm_post->forward(x);
  x = post_tile_embedding->forward(x.view({images, tiles, padded, d}), ids).reshape({images, tiles * padded, d});
  for (std::size_t i = 0; i < global_layers.size(); ++i) x = run_layer(layers.size() + i, global_layers[i], x, bias);

  const auto unpadded = [&](const at::Tensor& t) {
    return t.reshape({images, tiles, padded, -1}).narrow(2, 0, tokens).reshape({batch, per_sample, tiles, tokens, -1});
  };
  if (intermediate.empty()) return unpadded(x);
  // Stacked on a last axis and flattened: feature f of intermediate layer j lands at f x k + j.
  return at::cat({unpadded(x), unpadded(at::stack(intermediate, -1).flatten(-2))}, -1);
}

at::Tensor TiledVisionEncoderImpl::run_layer(std::size_t unit, const TransformerLayer& layer, const at::Tensor& x,
                                             const at::Tensor& bias) const {
  const auto step = [layer, bias](const at::Tensor& input) { return layer->forward(input, at::Tensor(), bias); };
  return runner ? runner->run(unit, x, step) : step(x);
}

}  // namespace ft_models
