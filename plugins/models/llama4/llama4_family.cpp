// Llama 4's language model: a mixture of experts with a shared expert (a sigmoid of each token's
// top-k router logits scales the expert's input), dense layers between sparse ones
// (interleave_moe_layer_step / moe_layers, the dense MLP intermediate_size_mlp wide), and
// attention that differs by layer: rotary layers attend within chunks of attention_chunk_size
// and L2-normalise q and k after the rotation (use_qk_norm); the others ("NoPE", no_rope_layers)
// have no positions and a query temperature growing with the position (attn_temperature_tuning).
// Read from a Llama4ForCausalLM config.json ("llama4_text") or a Llama4ForConditionalGeneration
// one ("llama4": the decoder with its vision tower and projector, images filling the <|patch|>
// positions: llama4_vision_model.h), and torchtune's Scout and Maverick, which are the latter.
#include "expert_layers.h"
#include "llama4_vision_config.h"
#include "llama4_vision_model.h"
#include "megatron_plan.h"
#include "torchtune_builders.h"

#include <ft/model_family.h>
#include <ft/plugin.h>

#include <ATen/ATen.h>

#include <tuple>

namespace {

using namespace ft_models;

void read_llama4_text(const ConfigJsonReader& json, DecoderConfig& c) {
  using NullIs = ConfigJsonReader::NullIs;
  refuse_unimplemented_expert_keys(json, "llama4");
  const auto layers = static_cast<std::size_t>(c.num_layers);
  ExpertLayers& e = c.experts;
  read_expert_counts(json, "num_local_experts", 16, 1, e);
  e.expert_dim = c.intermediate_dim;  // intermediate_size: each expert's and the shared expert's width
  e.shared_expert_dim = c.intermediate_dim;
  c.intermediate_dim = json.size("intermediate_size_mlp", 16384);  // the dense layers'
  e.score = RouterScore::SigmoidOfTopK;
  e.weight_expert_inputs = true;
  // Llama4ForCausalLM computes no load-balancing loss, whatever output_router_logits says.
  e.sparse.assign(layers, false);
  if (json.has("moe_layers")) {
    for (std::int64_t layer : layer_list(json, "moe_layers", c.num_layers))
      e.sparse[static_cast<std::size_t>(layer)] = true;
  } else {
    const std::int64_t step = json.size("interleave_moe_layer_step", 1);
    for (std::int64_t i = step - 1; i < c.num_layers; i += step) e.sparse[static_cast<std::size_t>(i)] = true;
  }

  c.rope_layers.assign(layers, true);
  if (json.has("no_rope_layers") && !json.at("no_rope_layers").empty()) {
    const auto& flags = json.at("no_rope_layers");
    if (!flags.is_array() || flags.size() != layers)
      json.fail("no_rope_layers", "expected a list of " + std::to_string(layers) + " flags (1: rotary, 0: none)");
    for (std::size_t i = 0; i < layers; ++i) {
      if (!flags[i].is_number_integer() || (flags[i] != 0 && flags[i] != 1))
        json.fail("no_rope_layers", "expected flags 0 or 1, got " + flags[i].dump());
      c.rope_layers[i] = flags[i] == 1;
    }
  } else {
    const std::int64_t interval = json.size("no_rope_layer_interval", 4);
    for (std::size_t i = 0; i < layers; ++i) c.rope_layers[i] = (static_cast<std::int64_t>(i) + 1) % interval != 0;
  }
  if (json.is_null("attention_chunk_size"))
    json.fail("attention_chunk_size", "null is not supported: Llama 4's rotary layers attend within chunks");
  c.attention_chunk_size = json.size("attention_chunk_size", 8192);
  if (json.has("layer_types")) {
    const auto& types = json.at("layer_types");
    for (std::size_t i = 0; i < layers; ++i) {
      const std::string expected = c.rope_layers[i] ? "chunked_attention" : "full_attention";
      if (!types.is_array() || types.size() != layers || types[i] != expected)
        json.fail("layer_types",
                  "must be chunked_attention on the rotary layers and full_attention on the others "
                  "(no_rope_layers), as Hugging Face derives it; layer " +
                      std::to_string(i) + " should be " + expected);
    }
  }
  c.qk_l2_norm = json.boolean("use_qk_norm", true);
  if (json.boolean("attn_temperature_tuning", true)) {
    QueryTemperature t;
    t.floor_scale = json.number("floor_scale", 8192, NullIs::Refused);
    t.attn_scale = json.number("attn_scale", 0.1, NullIs::Refused);
    if (!(t.floor_scale > 0)) json.fail("floor_scale", "must be positive");
    c.nope_query_temperature = t;
  }
}

void write_llama4_text(const DecoderConfig& c, nlohmann::ordered_json& j) {
  j["intermediate_size"] = c.experts.expert_dim;
  j["intermediate_size_mlp"] = c.intermediate_dim;
  j["num_local_experts"] = c.experts.num_experts;
  j["num_experts_per_tok"] = c.experts.top_k;
  std::vector<std::int64_t> moe_layers;
  std::vector<int> no_rope_layers;
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    if (c.layer_has_experts(i)) moe_layers.push_back(i);
    no_rope_layers.push_back(c.layer_rotates(i) ? 1 : 0);
  }
  j["moe_layers"] = moe_layers;
  j["no_rope_layers"] = no_rope_layers;
  j["attention_chunk_size"] = c.attention_chunk_size;
  j["use_qk_norm"] = c.qk_l2_norm;
  j["attn_temperature_tuning"] = c.nope_query_temperature.has_value();
  if (c.nope_query_temperature) {
    j["floor_scale"] = c.nope_query_temperature->floor_scale;
    j["attn_scale"] = c.nope_query_temperature->attn_scale;
  }
  j["attention_bias"] = false;
  j["router_jitter_noise"] = 0.0;
}

// Hugging Face's Llama 4 rotates each head's dimensions in interleaved pairs (2i, 2i + 1);
// fthost's rotary embedding pairs i with i + head_dim / 2. The rotary layers' q_proj and k_proj
// rows are permuted at load and back at save: q . k and the L2 norm are unchanged by the same
// permutation of both.
ft::nn::HfLayout::RowLayout interleaved_rotary_rows(std::int64_t head_dim, std::vector<bool> rope_layers) {
  return [head_dim, rope_layers](std::int64_t layer, ft::NamedTensor& t) {
    if (!rope_layers[static_cast<std::size_t>(layer)]) return;
    const auto regroup = [head_dim](const at::Tensor& x, bool to_interleaved) {
      std::vector<std::int64_t> shape{x.size(0) / head_dim, to_interleaved ? 2 : head_dim / 2,
                                      to_interleaved ? head_dim / 2 : 2};
      for (std::int64_t d = 1; d < x.dim(); ++d) shape.push_back(x.size(d));
      return x.reshape(shape).transpose(1, 2).reshape(x.sizes());
    };
    t.to_checkpoint = [regroup](const at::Tensor& live) { return regroup(live, true); };
    t.from_checkpoint = [regroup](const at::Tensor& stored) { return regroup(stored, false); };
  };
}

ft::nn::HfLayout::FeedForwardNames llama4_feed_forward_names() {
  return [](std::int64_t, ft::nn::FeedForwardBlockImpl& block, const std::string& prefix,
            std::vector<ft::NamedTensor>& out) {
    auto* moe = experts_of(block);
    if (!moe) return ft::nn::dense_mlp_names(block, prefix, "feed_forward", false, out);
    out.push_back({prefix + "feed_forward.router.weight", moe->router->gate->weight});
    add_stacked_expert_names(*moe, prefix + "feed_forward.", out);
    ft::nn::dense_mlp_names(*moe->shared_expert, prefix + "feed_forward.", "shared_expert", false, out);
  };
}

// The family description for one architecture: the text-only checkpoint or the multimodal one.
std::shared_ptr<FamilyHf> llama4_hf(bool conditional_generation) {
  auto f = std::make_shared<FamilyHf>();
  if (conditional_generation) {
    f->model_type = "llama4";
    f->architecture = "Llama4ForConditionalGeneration";
    f->text_config_key = "text_config";
    f->text_model_type = "llama4_text";
    f->layout.decoder_prefix = "language_model.model.";
    f->layout.lm_head = "language_model.lm_head.weight";
  } else {
    f->model_type = "llama4_text";
    f->architecture = "Llama4ForCausalLM";
  }
  f->absent_head_dim = 128;  // Llama4TextConfig's default; null: hidden_size / heads
  f->null_head_dim_derives = true;
  f->absent_rms_norm_eps = 1e-5;
  f->layout.feed_forward_names = llama4_feed_forward_names();
  f->read_own = read_llama4_text;
  f->write_own = write_llama4_text;
  return f;
}

// The layout needs the architecture's head_dim and rotary layers: completed per model.
std::shared_ptr<const FamilyHf> for_architecture(const std::shared_ptr<const FamilyHf>& family,
                                                 const DecoderConfig& c) {
  auto f = std::make_shared<FamilyHf>(*family);
  f->layout.query_key_rows = interleaved_rotary_rows(c.resolved_head_dim(), c.rope_layers);
  return f;
}

DecoderConfig llama4_sized(std::int64_t experts, std::int64_t moe_step, bool qk_norm,
                           std::optional<Llama3RopeScaling> scaling, std::int64_t max_seq_len) {
  DecoderConfig c;
  c.vocab_size = 202048;
  c.num_layers = 48;
  c.num_heads = 40;
  c.num_kv_heads = 8;
  c.embed_dim = 5120;
  c.head_dim = 128;
  c.intermediate_dim = 16384;
  c.max_seq_len = max_seq_len;
  c.norm_eps = 1e-5;
  c.rope_base = 500000.0;
  c.rope_scaling = scaling;
  c.experts.num_experts = experts;
  c.experts.top_k = 1;
  c.experts.expert_dim = 8192;
  c.experts.shared_expert_dim = 8192;
  c.experts.score = RouterScore::SigmoidOfTopK;
  c.experts.weight_expert_inputs = true;
  c.experts.sparse.assign(48, false);
  for (std::int64_t i = moe_step - 1; i < 48; i += moe_step) c.experts.sparse[static_cast<std::size_t>(i)] = true;
  c.rope_layers.assign(48, true);
  for (std::int64_t i = 3; i < 48; i += 4) c.rope_layers[static_cast<std::size_t>(i)] = false;
  c.attention_chunk_size = 8192;
  c.qk_l2_norm = qk_norm;
  c.nope_query_temperature = QueryTemperature{8192, 0.1};
  return c;
}

ft::Schema trainable_keys(ft::Schema s) {
  // No schema default, so that a llama4_text checkpoint can refuse a key that was given.
  s.optional("decoder_trainable", ft::ValueType::Bool, "",
             "train the language model (embedding, layers, norm, output); left out: true, as torchtune's")
      .optional("encoder_trainable", ft::ValueType::Bool, "",
                "train the vision encoder (without its pixel-shuffle MLP); left out: false, as torchtune's")
      .optional("fusion_trainable", ft::ValueType::Bool, "",
                "train the fusion parameters, the vision adapter's pixel-shuffle MLP and the projector; left out: "
                "true, as torchtune's");
  return s;
}

EarlyFusionTrainable trainable_of(const ft::ConfigNode& cfg) {
  const EarlyFusionTrainable d;
  return {cfg.get<bool>("decoder_trainable", d.decoder), cfg.get<bool>("encoder_trainable", d.encoder),
          cfg.get<bool>("fusion_trainable", d.fusion)};
}

// torchtune's llama4_vision_encoder as Scout and Maverick build it (Meta's published shapes).
Llama4VisionConfig published_vision(std::int64_t image_size) {
  Llama4VisionConfig v;
  v.hidden_size = 1408;
  v.num_layers = 34;
  v.num_heads = 16;
  v.intermediate_size = 5632;
  v.image_size = image_size;
  v.patch_size = 14;
  v.projector_input_dim = 4096;
  v.projector_output_dim = 4096;
  v.vision_output_dim = 4096;
  return v;
}

std::int64_t vision_parameter_count(const Llama4VisionConfig& v, std::int64_t decoder_width) {
  const std::int64_t h = v.hidden_size, i = v.intermediate_size, side = v.patches_per_side();
  const std::int64_t layer = 4 * (h * h + h) + (h * i + i) + (i * h + h) + 4 * h;
  return v.num_channels * v.patch_size * v.patch_size * h + h + (side * side + 1) * h + 4 * h + v.num_layers * layer +
         v.shuffled_dim() * v.projector_input_dim + v.projector_output_dim * v.projector_output_dim +
         v.vision_output_dim * decoder_width;
}

void register_components(ft::Registry& reg) {
  const std::shared_ptr<const FamilyHf> text = llama4_hf(false), multimodal = llama4_hf(true);

  ft::Schema from_config;
  from_config.required("path", ft::ValueType::String, "a Hugging Face config.json, or the model directory holding it")
      .path("path", ft::PathRole::InputPath);
  reg.add<ft::Model>(
      "fthost.models.llama4.from_hf_config", trainable_keys(std::move(from_config)),
      "a Llama 4 model read from a Hugging Face config.json: llama4_text (the language model), or llama4 (with its "
      "vision tower; the *_trainable keys as torchtune's builders)",
      [text, multimodal](const ft::ConfigNode& cfg, ft::Model::Args args) {
        const ConfigJsonReader json(cfg, cfg.get<std::string>("path"));
        const std::string model_type = json.string("model_type", "");
        if (model_type == "llama4_text") {
          for (const char* key : {"decoder_trainable", "encoder_trainable", "fusion_trainable"})
            if (cfg.has(key))
              cfg.fail(key, "applies to a llama4 checkpoint with its vision tower; " + json.path() +
                                " is llama4_text (the language model alone, all of it trained)");
          const DecoderConfig c = read_hf_config(json, *text);
          return make_family_model(c, for_architecture(text, c), args);
        }
        if (model_type != "llama4")
          json.fail("model_type", "\"" + model_type + "\": this component reads llama4_text and llama4");
        const DecoderConfig c = read_hf_config(json.nested("text_config"), *multimodal);
        return make_llama4_vision_model(c, read_llama4_vision_config(json), trainable_of(cfg),
                                        for_architecture(multimodal, c), args);
      });

  // torchtune's builders: the EarlyFusionModel of the decoder and the vision encoder, which
  // Hugging Face's Llama4ForConditionalGeneration checkpoints hold.
  const DecoderConfig scout = llama4_sized(16, 1, true, Llama3RopeScaling{16.0, 1.0, 1.0, 8192}, 10485760);
  const DecoderConfig maverick = llama4_sized(128, 2, false, std::nullopt, 1048576);
  for (const auto& [component, name, decoder] :
       {std::tuple{"torchtune.models.llama4.llama4_scout_17b_16e", "Scout 17B-16E (16 experts", scout},
        std::tuple{"torchtune.models.llama4.llama4_maverick_17b_128e", "Maverick 17B-128E (128 experts", maverick}}) {
    ft::Schema s;
    s.optional("image_size", ft::ValueType::Int, "336", "tile size in pixels the vision encoder reads");
    const DecoderConfig c = decoder;
    const std::int64_t total = c.parameter_count() + vision_parameter_count(published_vision(336), c.embed_dim);
    reg.add<ft::Model>(component, trainable_keys(std::move(s)),
                       std::string("Llama 4 ") + name + ", 1 per token) with its vision encoder, " +
                           with_thousands_separators(total) + " parameters",
                       [c, multimodal](const ft::ConfigNode& cfg, ft::Model::Args args) {
                         const std::int64_t image_size = cfg.get<std::int64_t>("image_size", 336);
                         if (image_size <= 0 || image_size % 28 != 0)
                           cfg.fail("image_size",
                                    "must be a positive multiple of 28 (patches of 14 pixels, folded "
                                    "2 x 2 by the pixel shuffle), got " +
                                        std::to_string(image_size));
                         if (std::string problem = c.problem(); !problem.empty()) cfg.fail("", problem);
                         return make_llama4_vision_model(c, published_vision(image_size), trainable_of(cfg),
                                                         for_architecture(multimodal, c), args);
                       });
  }

  register_expert_plan(reg, "torchtune.models.llama4.decoder_only_tp_plan",
                       "Llama 4's plan: attention and dense MLPs in the Megatron layout, the experts' hidden features "
                       "split, routers whole");
  register_family(reg, {"llama4",
                        {"llama4_text", "llama4"},
                        {"Llama4ForCausalLM", "Llama4ForConditionalGeneration"},
                        {"LLAMA4"},
                        "fthost.models.llama4.from_hf_config",
                        // Meta's tiktoken file, which the published directories carry beside tokenizer.json.
                        [](const ft::ModelDirectory& dir) -> std::optional<ft::TokenizerChoice> {
                          if (dir.hf_model_type != "llama4" && dir.hf_model_type != "llama4_text") return std::nullopt;
                          if (!dir.has_file("tokenizer.model")) return std::nullopt;
                          return ft::TokenizerChoice{"torchtune.models.llama4.llama4_transform",
                                                     dir.file("tokenizer.model"), "path", ""};
                        }});
}

}  // namespace

FT_PLUGIN("ft_model_llama4", "0.1.0", register_components)
