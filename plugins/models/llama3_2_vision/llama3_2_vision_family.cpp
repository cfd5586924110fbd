// The Llama 3.2 Vision family (Hugging Face's Mllama; torchtune's llama3_2_vision builders): the
// model from a config.json or at torchtune's named sizes, with torchtune's decoder_trainable /
// encoder_trainable / fusion_trainable split, reading a multimodal batch's images through the
// ModelImageInput role. Frozen parameters keep requires_grad false: no gradient, no optimizer
// state, and the checkpoint writes them back as loaded.
#include "config_json_reader.h"
#include "torchtune_builders.h"
#include "vision_language_config.h"
#include "vision_language_flops.h"
#include "vision_language_model.h"

#include <ft/config.h>
#include <ft/errors.h>
#include <ft/model_image_input.h>
#include <ft/model_layer_checkpointing.h>
#include <ft/model_layer_outline.h>
#include <ft/model_sharding.h>
#include <ft/nn/decoder_model.h>
#include <ft/nn/parameter_device.h>
#include <ft/plugin.h>
#include <ft/registry.h>

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ft_models {
namespace {

// torchtune's DeepFusionModel.set_trainable_params: the encoder's, the decoder's, and the fusion
// parameters (the encoder's projection head, which holds Hugging Face's global transformer and
// projector, the cross-attention layers, the fusion embedding rows), the last added or removed
// whatever the other two say.
struct TrainableParts {
  bool decoder = false;
  bool encoder = true;
  bool fusion = true;
};

void set_trainable(VisionLanguageModelImpl& model, const TrainableParts& parts) {
  const auto mark = [](torch::nn::Module& module, bool trainable) {
    for (auto& p : module.parameters()) p.requires_grad_(trainable);
  };
  auto& encoder = *model.encoder;
  for (at::Tensor* p : {&encoder.patch_embedding, &encoder.class_embedding, &encoder.position_gate,
                        &encoder.position_embedding, &encoder.tile_position_embedding})
    p->requires_grad_(parts.encoder);
  mark(*encoder.pre_tile_embedding, parts.encoder);
  mark(*encoder.post_tile_embedding, parts.encoder);
  mark(*encoder.layernorm_pre, parts.encoder);
  mark(*encoder.layernorm_post, parts.encoder);
  for (auto& layer : encoder.layers) mark(*layer, parts.encoder);
  auto& decoder = *model.decoder;
  decoder.tok_embeddings.requires_grad_(parts.decoder);
  for (auto& layer : decoder.self_attention_layers) mark(*layer, parts.decoder);
  mark(*decoder.norm, parts.decoder);
  decoder.output.requires_grad_(parts.decoder);
  for (auto& layer : encoder.global_layers) mark(*layer, parts.fusion);
  mark(*model.projection, parts.fusion);
  for (auto& layer : decoder.cross_attention_layers) mark(*layer, parts.fusion);
  decoder.fusion_embeddings.requires_grad_(parts.fusion);
}

class Llama32VisionModel final : public ft::Model,
                                 public ft::ModelImageInput,
                                 public ft::ModelSharding,
                                 public ft::ModelLayerCheckpointing,
                                 public ft::ModelLayerOutline {
 public:
  Llama32VisionModel(const VisionLanguageConfig& config, const TrainableParts& trainable, const ft::Model::Args& args)
      : config_(config), dtype_(args.dtype) {
    std::optional<ft::nn::MetaParameters> meta;
    if (args.device.is_meta()) meta.emplace();
    model_ = VisionLanguageModel(config);
    if (!args.device.is_meta()) initialize(args.seed);
    model_->to(args.device, args.dtype);
    set_trainable(*model_, trainable);
    model_->encoder->runner = runner_;
    model_->decoder->runner = runner_;
    model_->decoder->first_unit = model_->encoder->layers.size() + model_->encoder->global_layers.size();
    flops_.emplace(*model_);
  }

  torch::nn::Module& module() override { return *model_; }

  ft::ModelOutput forward(const ft::ModelInput& input, const ft::OutputRequest& request) override {
    return output_of(model_->hidden(text_input(input)), request);
  }

  ft::ModelOutput forward_with_images(const ft::ModelInput& input, const ft::BatchImages& images,
                                      const ft::OutputRequest& request) override {
    VisionLanguageInput in = text_input(input);
    in.images = images.images;
    in.aspect_ratio_ids = aspect_ratio_ids(images);
    const std::int64_t tiles = images.images.size(2);
    in.tile_mask = at::arange(tiles, images.tile_count.options()).lt(images.tile_count.unsqueeze(-1));
    in.encoder_mask = images.encoder_mask;
    return output_of(model_->hidden(in), request);
  }

  double training_flops_per_position(std::int64_t seq_len) const override { return flops_->per_position(seq_len); }
  double image_training_flops(const ft::BatchImages& images) const override { return flops_->of_images(images); }

  at::Tensor output_weight() override { return model_->decoder->output_weight(); }
  std::vector<ft::NamedTensor> hf_parameters() override { return mllama_hf_parameters(*model_); }
  std::string hf_config_json() const override { return write_mllama_config(config_, dtype_); }
  // The embedding's rows, the image token's and its kin's included (the logits cover only the
  // first config_.decoder.text.vocab_size).
  std::int64_t vocab_size() const override {
    return config_.decoder.text.vocab_size + config_.decoder.fusion_vocab_size;
  }
  std::int64_t max_seq_len() const override { return config_.decoder.text.max_seq_len; }
  void* find_role(ft::ModelRole wanted) override {
    if (wanted == ft::ModelImageInput::role) return static_cast<ft::ModelImageInput*>(this);
    if (wanted == ft::ModelSharding::role) return static_cast<ft::ModelSharding*>(this);
    if (wanted == ft::ModelLayerCheckpointing::role) return static_cast<ft::ModelLayerCheckpointing*>(this);
    if (wanted == ft::ModelLayerOutline::role) return static_cast<ft::ModelLayerOutline*>(this);
    return nullptr;
  }

  // Sharding: one unit per layer in forward order (the encoder's local and global layers, the
  // decoder's self- and cross-attention layers), as torchtune wraps each transformer layer; the
  // embedding and the output projection units of their own when asked.
  std::vector<ft::ShardingUnit> sharding_units() override {
    std::vector<ft::ShardingUnit> units;
    auto& encoder = *model_->encoder;
    for (std::size_t i = 0; i < encoder.layers.size(); ++i)
      units.push_back({"encoder.layers." + std::to_string(i), encoder.layers[i]->parameters()});
    for (std::size_t i = 0; i < encoder.global_layers.size(); ++i)
      units.push_back({"encoder.global_layers." + std::to_string(i), encoder.global_layers[i]->parameters()});
    auto& decoder = *model_->decoder;
    std::size_t next_self = 0, next_cross = 0;
    for (std::int64_t i = 0; i < decoder.config().total_layers(); ++i)
      units.push_back(
          {"decoder.layers." + std::to_string(i), decoder.config().is_cross_attention_layer(i)
                                                      ? decoder.cross_attention_layers[next_cross++]->parameters()
                                                      : decoder.self_attention_layers[next_self++]->parameters()});
    runner_->embedding_unit.reset();
    runner_->output_unit.reset();
    if (separate_embedding_) {
      // The lookup's backward needs only the indices.
      ft::ShardingUnit unit{"decoder.tok_embeddings", {decoder.tok_embeddings, decoder.fusion_embeddings}};
      unit.backward_needs_parameters = false;
      runner_->embedding_unit = units.size();
      units.push_back(std::move(unit));
    }
    if (separate_output_) {
      ft::ShardingUnit unit{"decoder.output", {decoder.output}};
      unit.used_after_layers = true;
      runner_->output_unit = units.size();
      units.push_back(std::move(unit));
    }
    return units;
  }
  void set_unit_hooks(ft::UnitHooks* hooks) override { runner_->hooks = hooks; }
  // torchtune's module names of the fusion model.
  std::vector<std::string> shard_separately(const std::vector<std::string>& module_names) override {
    std::vector<std::string> unknown;
    for (const std::string& name : module_names) {
      if (name == "decoder.tok_embeddings")
        separate_embedding_ = true;
      else if (name == "decoder.output")
        separate_output_ = true;
      else
        unknown.push_back(name);
    }
    if (!unknown.empty()) {
      std::string list;
      for (const auto& name : unknown) list += (list.empty() ? "\"" : ", \"") + name + "\"";
      throw ft::Error(list +
                      " names no module Llama 3.2 Vision can shard separately; it offers "
                      "\"decoder.tok_embeddings\" and \"decoder.output\" (every layer is a unit already)");
    }
    return {};
  }

  // Activation checkpointing of the self-attention layers, as torchtune's recipe wraps them: the
  // encoder's local and global layers, then the decoder's self-attention layers, in forward order.
  // Cross-attention layers are not checkpointed (they read the image states besides their input).
  std::int64_t num_checkpointable_layers() const override {
    return static_cast<std::int64_t>(checkpointable_units().size());
  }
  void set_activation_checkpointing(const std::vector<bool>& layers) override {
    const std::vector<std::size_t> units = checkpointable_units();
    if (layers.size() != units.size())
      throw ft::Error("activation checkpointing: " + std::to_string(layers.size()) + " layer flags for " +
                      std::to_string(units.size()) + " self-attention layers");
    runner_->checkpointed.assign(units.empty() ? 0 : units.back() + 1, false);
    for (std::size_t i = 0; i < units.size(); ++i) runner_->checkpointed[units[i]] = layers[i];
  }
  void set_activation_offloading(bool offload) override { runner_->offload = offload; }

  // The memory plan's view: the encoder's local and global layers over every tile's tokens, then
  // the decoder's stack, named and checkpointed as the sharding units and the runner have them.
  std::vector<ft::OutlinedLayer> outlined_layers() override {
    std::vector<ft::OutlinedLayer> layers;
    std::int64_t next_checkpoint = 0;
    auto& encoder = *model_->encoder;
    for (std::size_t i = 0; i < encoder.layers.size(); ++i)
      layers.push_back(
          {"encoder.layers." + std::to_string(i), encoder.layers[i].ptr(), ft::LayerTokens::Image, next_checkpoint++});
    for (std::size_t i = 0; i < encoder.global_layers.size(); ++i)
      layers.push_back({"encoder.global_layers." + std::to_string(i), encoder.global_layers[i].ptr(),
                        ft::LayerTokens::Image, next_checkpoint++});
    auto& decoder = *model_->decoder;
    std::size_t next_self = 0, next_cross = 0;
    for (std::int64_t i = 0; i < decoder.config().total_layers(); ++i) {
      const std::string name = "decoder.layers." + std::to_string(i);
      if (decoder.config().is_cross_attention_layer(i))
        layers.push_back({name, decoder.cross_attention_layers[next_cross++].ptr(), ft::LayerTokens::Text, -1});
      else
        layers.push_back(
            {name, decoder.self_attention_layers[next_self++].ptr(), ft::LayerTokens::Text, next_checkpoint++});
    }
    return layers;
  }

  ft::ImageTiles image_tiles() const override {
    const TiledVisionConfig& v = config_.vision;
    const auto& encoder = *model_->encoder;
    ft::ImageTiles tiles;
    tiles.image_size = v.image_size;
    tiles.max_num_tiles = v.max_num_tiles;
    tiles.every_image_max_tiles = true;
    const std::int64_t tokens = v.tokens_per_tile(), d = v.hidden_size;
    tiles.encoder_tokens = (tokens + 7) / 8 * 8;  // padded to a multiple of 8, as the forward pads them
    tiles.shared_attention_bias = true;
    tiles.image_states = tokens;
    // The encoder's embedding keeps the pixels (the patch convolution's input), the per-tile
    // position lookup (its gate's input) and layernorm_pre's input; layernorm_post keeps its
    // (padded) input. The projector keeps the concatenated features, and the cross-attention
    // layers' key and value projections its output, the image states.
    const bool encoder_trains = encoder.patch_embedding.requires_grad();
    const bool projection_trains = model_->projection->weight.requires_grad();
    const auto pixels = static_cast<double>(v.num_channels * v.image_size * v.image_size);
    double kept = 0;
    if (encoder_trains)
      kept += pixels + static_cast<double>(2 * tokens * d) + static_cast<double>(tiles.encoder_tokens * d);
    if (projection_trains) kept += static_cast<double>(tokens * (v.output_dim + config_.decoder.text.embed_dim));
    tiles.elements_kept_outside_layers = kept;
    tiles.features_need_grad = false;
    for (const auto& p : model_->encoder->parameters()) tiles.features_need_grad |= p.requires_grad();
    tiles.features_need_grad |= projection_trains;
    return tiles;
  }

  std::vector<at::Tensor> text_embedding_parameters() override {
    return {model_->decoder->tok_embeddings, model_->decoder->fusion_embeddings};
  }

 private:
  static VisionLanguageInput text_input(const ft::ModelInput& input) {
    if (input.mask.defined() || !input.document_lengths.empty())
      throw ft::Error("Llama 3.2 Vision takes no packed or masked sequences (torchtune packs no multimodal dataset)");
    VisionLanguageInput in;
    in.tokens = input.tokens;
    in.positions = input.input_pos;
    return in;
  }

  // The id of each image's canvas in the model's supported aspect ratios (0: a padding image).
  at::Tensor aspect_ratio_ids(const ft::BatchImages& images) const {
    const at::Tensor ratios = images.aspect_ratio.to(at::kCPU, at::kLong).contiguous();
    const at::Tensor counts = images.tile_count.to(at::kCPU, at::kLong).contiguous();
    at::Tensor ids = at::zeros(counts.sizes(), at::kLong);
    auto r = ratios.accessor<std::int64_t, 3>();
    auto n = counts.accessor<std::int64_t, 2>();
    auto out = ids.accessor<std::int64_t, 2>();
    for (std::int64_t b = 0; b < counts.size(0); ++b)
      for (std::int64_t i = 0; i < counts.size(1); ++i) {
        if (n[b][i] == 0) continue;
        const std::int64_t id = config_.vision.aspect_ratio_id(r[b][i][0], r[b][i][1]);
        if (id == 0)
          throw ft::Error("Llama 3.2 Vision: image " + std::to_string(i) + " of batch row " + std::to_string(b) +
                          " has a " + std::to_string(r[b][i][0]) + "x" + std::to_string(r[b][i][1]) +
                          " tile canvas, which the model has no embedding for (max_num_tiles " +
                          std::to_string(config_.vision.max_num_tiles) + ")");
        out[b][i] = id;
      }
    return ids.to(images.images.device());
  }

  ft::ModelOutput output_of(const at::Tensor& hidden, const ft::OutputRequest& request) const {
    ft::ModelOutput out;
    if (request.hidden_only) {
      out.hidden = hidden;
      return out;
    }
    const at::Tensor logits = model_->decoder->logits(hidden);
    const int chunks = std::max(1, request.num_output_chunks);
    out.logits = chunks == 1 ? std::vector<at::Tensor>{logits} : logits.chunk(chunks, 1);
    return out;
  }

  // Before any checkpoint loads: N(0, 0.02) for matrices and embeddings, norms at their identity,
  // biases and gates as constructed, from one seeded generator in parameter order.
  void initialize(std::uint64_t seed) {
    at::NoGradGuard no_grad;
    auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    for (const auto& item : model_->named_parameters()) {
      at::Tensor p = item.value();
      if (p.dim() < 2) continue;
      p.normal_(0.0, 0.02, generator);
    }
  }

  // Runner units of the self-attention layers, in forward order.
  std::vector<std::size_t> checkpointable_units() const {
    const auto& encoder = *model_->encoder;
    std::vector<std::size_t> units;
    const std::size_t encoder_units = encoder.layers.size() + encoder.global_layers.size();
    for (std::size_t i = 0; i < encoder_units; ++i) units.push_back(i);
    const auto& decoder = model_->decoder->config();
    for (std::int64_t i = 0; i < decoder.total_layers(); ++i)
      if (!decoder.is_cross_attention_layer(i)) units.push_back(encoder_units + static_cast<std::size_t>(i));
    return units;
  }

  VisionLanguageConfig config_;
  c10::ScalarType dtype_;
  VisionLanguageModel model_{nullptr};
  std::shared_ptr<LayerRunner> runner_ = std::make_shared<LayerRunner>();
  bool separate_embedding_ = false, separate_output_ = false;
  std::optional<VisionLanguageFlops> flops_;  // counted once built, before any sharding
};

ft::Schema trainable_keys(ft::Schema s, const TrainableParts& defaults) {
  const auto flag = [](bool value) { return value ? "true" : "false"; };
  s.optional("decoder_trainable", ft::ValueType::Bool, flag(defaults.decoder),
             "train the language model's own parameters (its self-attention layers, embedding, norm, output)")
      .optional("encoder_trainable", ft::ValueType::Bool, flag(defaults.encoder),
                "train the image encoder (without its projection head)")
      .optional("fusion_trainable", ft::ValueType::Bool, flag(defaults.fusion),
                "train the fusion parameters: the projection head (global layers and projector), the "
                "cross-attention layers and the image tokens' embedding rows");
  return s;
}

TrainableParts trainable_of(const ft::ConfigNode& cfg, const TrainableParts& defaults) {
  return {cfg.get<bool>("decoder_trainable", defaults.decoder), cfg.get<bool>("encoder_trainable", defaults.encoder),
          cfg.get<bool>("fusion_trainable", defaults.fusion)};
}

// torchtune's llama3_2_vision_11b / _90b: Meta's published shapes (Hugging Face's config.json).
VisionLanguageConfig named_size(bool large, std::int64_t image_size) {
  VisionLanguageConfig c;
  TiledVisionConfig& v = c.vision;
  v.image_size = image_size;
  v.patch_size = 14;
  v.hidden_size = 1280;
  v.num_heads = 16;
  v.num_layers = 32;
  v.num_global_layers = 8;
  v.intermediate_size = 5120;
  v.max_num_tiles = 4;
  v.norm_eps = 1e-5;
  v.intermediate_layers = {3, 7, 15, 23, 30};
  v.supported_aspect_ratios = {{1, 1}, {1, 2}, {1, 3}, {1, 4}, {2, 1}, {2, 2}, {3, 1}, {4, 1}};
  v.output_dim = 7680;
  DecoderConfig& t = c.decoder.text;
  t.vocab_size = 128256;
  t.embed_dim = large ? 8192 : 4096;
  t.num_heads = large ? 64 : 32;
  t.num_kv_heads = 8;
  t.intermediate_dim = large ? 28672 : 14336;
  t.num_layers = large ? 80 : 32;
  t.max_seq_len = 131072;
  t.norm_eps = 1e-5;
  t.rope_base = 500000.0;
  t.rope_scaling = Llama3RopeScaling{8.0, 1.0, 4.0, 8192};
  // Hugging Face's indices in the whole stack: a cross-attention layer before every fourth
  // self-attention layer's successor (torchtune's fusion_interval 4), 8 (11B) or 20 (90B).
  const std::int64_t fused = large ? 20 : 8;
  for (std::int64_t i = 0; i < fused; ++i) c.decoder.cross_attention_layers.push_back(3 + 5 * i);
  c.image_token_index = 128256;
  return c;
}

void register_components(ft::Registry& reg) {
  const TrainableParts full{true, true, true};
  ft::Schema from_config;
  from_config.required("path", ft::ValueType::String, "a Hugging Face config.json, or the model directory holding it")
      .path("path", ft::PathRole::InputPath);
  reg.add<ft::Model>("fthost.models.llama3_2_vision.from_hf_config", trainable_keys(from_config, full),
                     "Llama 3.2 Vision (Hugging Face's mllama) read from its config.json; every part trains unless "
                     "a *_trainable key says otherwise",
                     [full](const ft::ConfigNode& cfg, ft::Model::Args args) -> std::unique_ptr<ft::Model> {
                       const ConfigJsonReader json(cfg, cfg.get<std::string>("path"));
                       return std::make_unique<Llama32VisionModel>(read_mllama_config(json), trainable_of(cfg, full),
                                                                   args);
                     });

  // torchtune's builders and their defaults: the language model frozen, the encoder and the
  // fusion parameters trained.
  const TrainableParts torchtune_defaults;
  for (const bool large : {false, true}) {
    ft::Schema s;
    s.optional("image_size", ft::ValueType::Int, "560",
               "tile size in pixels: 560 for the Instruct weights, 448 for the pretrained");
    const std::string name = std::string("torchtune.models.llama3_2_vision.llama3_2_vision_") + (large ? "90b" : "11b");
    reg.add<ft::Model>(
        name, trainable_keys(std::move(s), torchtune_defaults),
        std::string("Llama 3.2 Vision ") + (large ? "90B" : "11B") +
            " (Meta's published shapes; tiles of image_size pixels)",
        [large, torchtune_defaults](const ft::ConfigNode& cfg, ft::Model::Args args) -> std::unique_ptr<ft::Model> {
          const std::int64_t image_size = cfg.get<std::int64_t>("image_size", 560);
          if (image_size <= 0 || image_size % 14 != 0)
            cfg.fail("image_size",
                     "must be a positive multiple of the patch size 14, got " + std::to_string(image_size));
          return std::make_unique<Llama32VisionModel>(named_size(large, image_size),
                                                      trainable_of(cfg, torchtune_defaults), args);
        });
  }

  register_family(reg, {"llama3_2_vision",
                        {"mllama"},
                        {"MllamaForConditionalGeneration"},
                        {"LLAMA3_VISION"},
                        "fthost.models.llama3_2_vision.from_hf_config",
                        [](const ft::ModelDirectory& dir) -> std::optional<ft::TokenizerChoice> {
                          if (dir.hf_model_type != "mllama") return std::nullopt;
                          if (dir.has_file("tokenizer.json"))
                            return ft::TokenizerChoice{"torchtune.models.llama3_2_vision.llama3_2_vision_transform",
                                                       dir.file("tokenizer.json"), "path", ""};
                          return std::nullopt;
                        }});
}

}  // namespace
}  // namespace ft_models

FT_PLUGIN("ft_model_llama3_2_vision", "0.1.0", ft_models::register_components)
