#include "llama4_vision_model.h"

#include "decoder_builder.h"
#include "llama4_vision_encoder.h"
#include "matrix_elements.h"
#include "vision_layer_names.h"

#include <ft/errors.h>
#include <ft/model_image_input.h>
#include <ft/model_layer_outline.h>
#include <ft/nn/decoder_model.h>
#include <ft/nn/parameter_device.h>
#include <ft/text.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ft_models {
namespace {

void fill_normal(at::Tensor& t, double stddev, at::Generator& gen) {
  t.copy_(at::empty(t.sizes(), t.options().device(at::kCPU)).normal_(0.0, stddev, gen));
}

// Hugging Face's initialisation: linear weights N(0, 0.02), the class and position embeddings
// N(0, hidden^-1/2), norms and biases at their construction values.
void initialize_vision(Llama4VisionEncoderImpl& encoder, ft::nn::LinearImpl& projector, std::uint64_t seed) {
  at::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(seed ^ 0x4c4c414d41345649ULL);
  const double embedding_std = 1.0 / std::sqrt(static_cast<double>(encoder.config().hidden_size));
  fill_normal(encoder.class_embedding, embedding_std, gen);
  fill_normal(encoder.positional_embedding, embedding_std, gen);
  for (const auto& module : encoder.modules(/*include_self=*/false))
    if (auto* linear = dynamic_cast<ft::nn::LinearImpl*>(module.get())) fill_normal(linear->weight, 0.02, gen);
  fill_normal(projector.weight, 0.02, gen);
}

class Llama4VisionModel final : public ft::nn::DecoderModel, public ft::ModelImageInput, public ft::ModelLayerOutline {
 public:
  Llama4VisionModel(const DecoderConfig& config, const Llama4VisionConfig& vision,
                    const EarlyFusionTrainable& trainable, std::shared_ptr<const FamilyHf> family,
                    const ft::Model::Args& args)
      : DecoderModel([&config] { return build_decoder(config); }, args, family->layout),
        config_(config),
        vision_(vision),
        family_(std::move(family)) {
    {
      std::optional<ft::nn::MetaParameters> meta;
      if (args.device.is_meta()) meta.emplace();
      encoder_ = Llama4VisionEncoder(vision);
      projector_ = ft::nn::Linear(vision.vision_output_dim, config.embed_dim, false);
    }
    if (!args.device.is_meta()) initialize_vision(*encoder_, *projector_, args.seed);
    tile_training_flops_ = count_tile_training_flops();
    encoder_->to(args.device, args.dtype);
    projector_->to(args.device, args.dtype);
    // Registered under the decoder, whose parameters the strategies and the optimizer see.
    decoder().register_module("vision_model", encoder_);
    decoder().register_module("multi_modal_projector", projector_);
    set_trainable(trainable);
  }

  ft::ModelOutput forward_with_images(const ft::ModelInput& input, const ft::BatchImages& images,
                                      const ft::OutputRequest& request) override {
    if (context_parallel_)
      throw ft::Error(
          "Llama 4 with images under context parallelism: each rank holds a share of every sequence, and the image "
          "features fill the <|patch|> positions of whole sequences; train images without context_parallel_dim");
    const at::Tensor features = image_features(images);
    const at::Tensor placeholders = input.tokens.eq(vision_.image_token_index);
    const std::int64_t slots = placeholders.sum().item<std::int64_t>();
    if (slots != features.size(0))
      throw ft::Error("Llama 4: the batch's " + std::to_string(features.size(0) / vision_.features_per_tile()) +
                      " image tiles give " + std::to_string(features.size(0)) + " features for " +
                      std::to_string(slots) + " <|patch|> tokens (id " + std::to_string(vision_.image_token_index) +
                      "): the model transform's tile grid and the images disagree");
    // As Hugging Face does: the tiles' features, in order, replace the placeholders' embeddings.
    decoder().fuse_embeddings = [placeholders, features](const at::Tensor& embeddings) {
      return embeddings.masked_scatter(placeholders.unsqueeze(-1), features.to(embeddings.scalar_type()));
    };
    struct Reset {
      ft::nn::TransformerDecoderImpl& decoder;
      ~Reset() { decoder.fuse_embeddings = nullptr; }
    } reset{decoder()};
    return forward(input, request);
  }

  double image_training_flops(const ft::BatchImages& images) const override {
    return tile_training_flops_ * static_cast<double>(images.tile_count.sum().item<std::int64_t>());
  }

  std::vector<ft::NamedTensor> hf_parameters() override {
    std::vector<ft::NamedTensor> out = DecoderModel::hf_parameters();
    Llama4VisionEncoderImpl& e = *encoder_;
    const std::string v = "vision_model.";
    out.push_back({v + "patch_embedding.linear.weight", e.patch_embedding->weight});
    out.push_back({v + "class_embedding", e.class_embedding});
    out.push_back({v + "positional_embedding_vlm", e.positional_embedding});
    layer_norm_names(out, v + "layernorm_pre", e.layernorm_pre);
    layer_norm_names(out, v + "layernorm_post", e.layernorm_post);
    for (std::size_t i = 0; i < e.layers.size(); ++i)
      clip_layer_names(out, v + "model.layers." + std::to_string(i) + ".", *e.layers[i]);
    out.push_back({v + "vision_adapter.mlp.fc1.weight", e.adapter_fc1->weight});
    out.push_back({v + "vision_adapter.mlp.fc2.weight", e.adapter_fc2->weight});
    out.push_back({"multi_modal_projector.linear_1.weight", projector_->weight});
    return out;
  }

  std::string hf_config_json() const override {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(write_hf_config(config_, *family_, dtype()));
    write_llama4_vision_config(vision_, j);
    return j.dump(2) + "\n";
  }

  void* find_role(ft::ModelRole role) override {
    if (role == ft::ModelImageInput::role) return static_cast<ft::ModelImageInput*>(this);
    if (role == ft::ModelLayerOutline::role) return static_cast<ft::ModelLayerOutline*>(this);
    return DecoderModel::find_role(role);
  }

  // The decoder's units, then the vision tower's stages as optional units (a batch without images
  // leaves them without a gradient, which the strategy keeps undefined): the embedding, each
  // layer, and the head (the last norm, the pixel-shuffle MLP and the projector).
  std::vector<ft::ShardingUnit> sharding_units() override {
    std::vector<ft::ShardingUnit> units = DecoderModel::sharding_units();
    first_vision_unit_ = units.size();
    const auto add = [&units](std::string name, std::vector<at::Tensor> parameters) {
      ft::ShardingUnit unit{std::move(name), std::move(parameters)};
      unit.optional = true;
      units.push_back(std::move(unit));
    };
    Llama4VisionEncoderImpl& e = *encoder_;
    std::vector<at::Tensor> embedding = e.patch_embedding->parameters();
    embedding.push_back(e.class_embedding);
    embedding.push_back(e.positional_embedding);
    for (const auto& p : e.layernorm_pre->parameters()) embedding.push_back(p);
    add("vision_model.embeddings", std::move(embedding));
    for (std::size_t i = 0; i < e.layers.size(); ++i)
      add("vision_model.model.layers." + std::to_string(i), e.layers[i]->parameters());
    std::vector<at::Tensor> head = e.layernorm_post->parameters();
    for (const auto* module : {&e.adapter_fc1, &e.adapter_fc2, &projector_})
      for (const auto& p : (*module)->parameters()) head.push_back(p);
    add("vision_model.head", std::move(head));
    return units;
  }
  void set_unit_hooks(ft::UnitHooks* hooks) override {
    DecoderModel::set_unit_hooks(hooks);
    unit_hooks_ = hooks;
  }

  // The memory plan's view: the vision tower's layers over every tile's tokens (never
  // checkpointed), then the decoder's, as the sharding units name them.
  std::vector<ft::OutlinedLayer> outlined_layers() override {
    std::vector<ft::OutlinedLayer> layers;
    for (std::size_t i = 0; i < encoder_->layers.size(); ++i)
      layers.push_back(
          {"vision_model.model.layers." + std::to_string(i), encoder_->layers[i].ptr(), ft::LayerTokens::Image, -1});
    const auto& text = decoder().layers;
    for (std::size_t i = 0; i < text.size(); ++i)
      layers.push_back(
          {"layers." + std::to_string(i), text[i].ptr(), ft::LayerTokens::Text, static_cast<std::int64_t>(i)});
    return layers;
  }

  // Tiles come from the transform (max_num_tiles and a thumbnail): the model takes any number.
  ft::ImageTiles image_tiles() const override {
    const Llama4VisionConfig& v = vision_;
    ft::ImageTiles tiles;
    tiles.image_size = v.image_size;
    const std::int64_t tokens = v.patches_per_side() * v.patches_per_side() + 1, d = v.hidden_size;
    tiles.encoder_tokens = tokens;
    // The embedding keeps the pixels (the patch map's input) and layernorm_pre's input, the head
    // layernorm_post's; the adapter keeps the shuffled features, both GELUs' inputs and fc2's,
    // and the projector its input.
    const auto features = static_cast<double>(v.features_per_tile());
    const bool encoder_trains = encoder_->patch_embedding->weight.requires_grad();
    const bool adapter_trains = encoder_->adapter_fc1->weight.requires_grad();
    double kept = 0;
    if (encoder_trains)
      kept += static_cast<double>(v.num_channels * v.image_size * v.image_size) + static_cast<double>(2 * tokens * d);
    if (adapter_trains)
      kept += features * static_cast<double>(v.shuffled_dim() + 2 * v.projector_input_dim + 2 * v.projector_output_dim);
    tiles.elements_kept_outside_layers = kept;
    for (const auto& p : encoder_->parameters()) tiles.features_need_grad |= p.requires_grad();
    tiles.features_need_grad |= projector_->weight.requires_grad();
    return tiles;
  }

  std::vector<at::Tensor> text_embedding_parameters() override { return {decoder().tok_embeddings}; }

  void apply_context_parallel(const std::shared_ptr<ft::Collectives>& group, ft::RotateMethod rotate) override {
    DecoderModel::apply_context_parallel(group, rotate);
    context_parallel_ = true;
  }

 private:
  // The real tiles of every image in order (sample, image, tile), through the tower and the
  // projector: [tiles x features_per_tile, decoder width].
  at::Tensor image_features(const ft::BatchImages& images) {
    const at::Tensor& pixels = images.images;
    if (pixels.dim() != 6 || images.tile_count.sizes() != pixels.sizes().slice(0, 2))
      throw ft::Error(
          "Llama 4: images must be [batch, images, tiles, channels, size, size] with a tile count per "
          "image, got " +
          ft::shape_text(pixels.sizes()) + " and " + ft::shape_text(images.tile_count.sizes()));
    const at::Tensor real = at::arange(pixels.size(2), images.tile_count.options())
                                .lt(images.tile_count.unsqueeze(-1))
                                .flatten()
                                .to(pixels.device());
    const at::Tensor tiles = pixels.flatten(0, 2).index({real});
    // Each stage inside its sharding unit's hooks: a strategy gathers one at a time.
    std::size_t unit = first_vision_unit_.value_or(0);
    const auto stage = [&](const auto& run) {
      const bool hooked = unit_hooks_ && first_vision_unit_;
      if (hooked) unit_hooks_->before_forward(unit);
      at::Tensor out = run();
      if (hooked) out = unit_hooks_->after_forward(unit, std::move(out));
      ++unit;
      return out;
    };
    const Llama4VisionEncoderImpl& e = *encoder_;
    at::Tensor x = stage([&] { return e.embed(tiles); });
    for (std::size_t i = 0; i < e.layers.size(); ++i) x = stage([&] { return e.layer(i, x); });
    const at::Tensor features = stage([&] { return projector_->forward(e.head(x)); });
    return features.reshape({-1, features.size(-1)});
  }

  // One tile through the tower and the projector, from the modules as built (a sharding strategy
  // later leaves a rank only its share): 6 x the weights each token multiplies through (the
  // patches through the patch embedding, the patches and the class token through every layer,
  // the shuffled features through the adapter and the projector), plus every layer's attention,
  // 12 x width x tokens per token as the decoder's count has it (no causal mask here).
  double count_tile_training_flops() const {
    const Llama4VisionEncoderImpl& e = *encoder_;
    const auto patches = static_cast<double>(vision_.patches_per_side() * vision_.patches_per_side());
    const double tokens = patches + 1;
    double layer_weights = 0;
    for (const auto& layer : e.layers) layer_weights += matrix_elements(layer->parameters());
    const double matmul =
        patches * matrix_elements(e.patch_embedding->parameters()) + tokens * layer_weights +
        static_cast<double>(vision_.features_per_tile()) *
            (matrix_elements(e.adapter_fc1->parameters()) + matrix_elements(e.adapter_fc2->parameters()) +
             matrix_elements(projector_->parameters()));
    const double attention = 12.0 * static_cast<double>(e.layers.size() * vision_.hidden_size) * tokens * tokens;
    return 6 * matmul + attention;
  }

  void set_trainable(const EarlyFusionTrainable& t) {
    for (auto& p : decoder().parameters()) p.requires_grad_(t.decoder);
    for (auto& p : encoder_->parameters()) p.requires_grad_(t.encoder);
    // torchtune's fusion parameters win whatever the other two say.
    for (auto& p : encoder_->adapter_fc1->parameters()) p.requires_grad_(t.fusion);
    for (auto& p : encoder_->adapter_fc2->parameters()) p.requires_grad_(t.fusion);
    for (auto& p : projector_->parameters()) p.requires_grad_(t.fusion);
  }

  DecoderConfig config_;
  Llama4VisionConfig vision_;
  std::shared_ptr<const FamilyHf> family_;
  Llama4VisionEncoder encoder_{nullptr};
  ft::nn::Linear projector_{nullptr};
  bool context_parallel_ = false;
  double tile_training_flops_ = 0;  // image_training_flops per real tile
  ft::UnitHooks* unit_hooks_ = nullptr;
  // The vision embedding's index among the sharding units (its layers and head follow), once asked.
  std::optional<std::size_t> first_vision_unit_;
};

}  // namespace

std::unique_ptr<ft::Model> make_llama4_vision_model(const DecoderConfig& decoder, const Llama4VisionConfig& vision,
                                                    const EarlyFusionTrainable& trainable,
                                                    std::shared_ptr<const FamilyHf> family,
                                                    const ft::Model::Args& args) {
  return std::make_unique<Llama4VisionModel>(decoder, vision, trainable, std::move(family), args);
}

}  // namespace ft_models
