// Phi-3 and Phi-4 (Hugging Face model_type "phi3"): Llama's computation, with checkpoints that
// fuse q/k/v into one qkv_proj and gate/up into one gate_up_proj. torchtune's phi3 builder, the
// phi3_mini and phi4_14b named sizes, the config.json of model_type "phi3", and the Phi-3
// (SentencePiece) or Phi-4 (BPE) tokenizer of a model directory.
#include "torchtune_builders.h"

#include <ft/model_family.h>
#include <ft/plugin.h>

namespace {

using namespace ft_models;

std::shared_ptr<const FamilyHf> phi3_hf() {
  auto f = std::make_shared<FamilyHf>();
  f->model_type = "phi3";
  f->architecture = "Phi3ForCausalLM";
  f->layout.fused_qkv = true;
  f->layout.fused_gate_up = true;
  f->absent_rms_norm_eps = 1e-5;  // Phi3Config's default
  f->read_own = [](const ConfigJsonReader& json, DecoderConfig& c) {
    c.sliding_window = json.integer("sliding_window", 0, ConfigJsonReader::NullIs::Default);  // null: none
  };
  f->write_own = [](const DecoderConfig& c, nlohmann::ordered_json& j) {
    j["sliding_window"] = c.sliding_window > 0 ? nlohmann::ordered_json(c.sliding_window) : nullptr;
  };
  return f;
}

DecoderConfig phi3_sized(std::int64_t vocab, std::int64_t layers, std::int64_t heads, std::int64_t kv_heads,
                         std::int64_t dim, std::int64_t hidden, std::int64_t max_seq_len, double rope_base,
                         std::int64_t sliding_window) {
  DecoderConfig c;
  c.vocab_size = vocab;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.embed_dim = dim;
  c.intermediate_dim = hidden;
  c.max_seq_len = max_seq_len;
  c.norm_eps = 1e-5;
  c.rope_base = rope_base;
  c.sliding_window = sliding_window;
  return c;
}

void register_components(ft::Registry& reg) {
  const auto hf = phi3_hf();
  register_sliding_window_builder(reg, "torchtune.models.phi3.phi3",
                                  "Phi-3 / Phi-4 decoder of any size (fused q/k/v and gate/up in its checkpoints)", hf);
  register_named_sizes(
      reg,
      {{"torchtune.models.phi3.phi3_mini", "Phi-3 mini 4k (sliding window 2047; fused q/k/v and gate/up on disk)",
        phi3_sized(32064, 32, 32, 32, 3072, 8192, 4096, 10000.0, 2047)},
       {"torchtune.models.phi4.phi4_14b", "Phi-4 14B (RoPE theta 250000; fused q/k/v and gate/up on disk)",
        phi3_sized(100352, 40, 40, 10, 5120, 17920, 16384, 250000.0, 0)}},
      hf);
  register_hf_config_builder(reg, "fthost.models.phi3.from_hf_config",
                             "a Phi-3 / Phi-4 architecture read from a Hugging Face config.json", hf);

  // Phi-3's SentencePiece model, else Phi-4's BPE vocabulary and merges.
  const auto phi3_mini =
      tokenizer_by_model_type("phi3", "torchtune.models.phi3.phi3_mini_tokenizer", {"tokenizer.model"});
  register_family(reg, {"phi3",
                        {"phi3"},
                        {"Phi3ForCausalLM"},
                        {"PHI3_MINI", "PHI4"},
                        "fthost.models.phi3.from_hf_config",
                        [phi3_mini](const ft::ModelDirectory& dir) -> std::optional<ft::TokenizerChoice> {
                          if (auto sentencepiece = phi3_mini(dir)) return sentencepiece;
                          if (dir.hf_model_type != "phi3" || !dir.has_file("vocab.json") || !dir.has_file("merges.txt"))
                            return std::nullopt;
                          return ft::TokenizerChoice{"torchtune.models.phi4.phi4_tokenizer", dir.file("vocab.json"),
                                                     "vocab_path", dir.file("merges.txt")};
                        }});
}

}  // namespace

FT_PLUGIN("ft_model_phi3", "0.1.0", register_components)
