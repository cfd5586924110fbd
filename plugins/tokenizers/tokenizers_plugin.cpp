// Plugin ft_tokenizers: torchtune's model tokenizers (Llama 2, 3 and 4, Qwen 2, 2.5 and 3, Mistral,
// Gemma, Phi-3 mini, Phi-4) over Hugging Face tokenizer.json, tiktoken, vocab.json + merges.txt and
// SentencePiece files.
#include <ft/config.h>
#include <ft/plugin.h>
#include <ft/tokenizer.h>

#include "tokenizer_factories.h"

namespace {

using ft::ValueType;

// The keys every torchtune tokenizer builder takes (truncation_type: torchtune's main branch).
ft::Schema& add_length_keys(ft::Schema& s) {
  return s
      .optional("max_seq_len", ValueType::Int, "",
                "truncate tokenized conversations to this many tokens; packed datasets' pack length")
      .optional("truncation_type", ValueType::String, "\"right\"",
                "which end truncation keeps: right (the start) or left (the end)");
}

// ... after the tokenizer file, for the builders that take one `path`.
ft::Schema common_schema(const std::string& path_help) {
  ft::Schema s;
  s.required("path", ValueType::String, path_help);
  add_length_keys(s);
  return s;
}

std::int64_t max_seq_len(const ft::ConfigNode& cfg) {
  const auto n = cfg.get_optional<std::int64_t>("max_seq_len");
  if (n && *n <= 0) cfg.fail("max_seq_len", "must be positive, got " + std::to_string(*n));
  return n.value_or(0);
}

ft_tok::Truncation truncation(const ft::ConfigNode& cfg) {
  try {
    return ft_tok::parse_truncation(cfg.get<std::string>("truncation_type"));
  } catch (const ft::Error& e) {
    cfg.fail("truncation_type", e.what());
  }
}

std::optional<std::vector<ft_tok::AddedToken>> special_tokens(const ft::ConfigNode& cfg) {
  auto p = cfg.get_optional<std::string>("special_tokens_path");
  if (!p || p->empty()) return std::nullopt;
  return ft_tok::load_added_tokens(*p);
}

std::string special_tokens_path(const ft::ConfigNode& cfg) { return cfg.get<std::string>("special_tokens_path", ""); }

// torchtune accepts any PromptTemplate; fthost renders each family's own chat format.
void refuse_prompt_template(const ft::ConfigNode& cfg) {
  if (auto t = cfg.get_optional<std::string>("prompt_template"); t && !t->empty())
    cfg.fail("prompt_template",
             "custom prompt templates are not supported; the family's chat format is used (remove the key)");
}

// The SentencePiece families' templates (prompt_template.h); "" for none.
ft_tok::PromptTemplate prompt_template(const ft::ConfigNode& cfg) {
  try {
    return ft_tok::parse_prompt_template(cfg.get<std::string>("prompt_template"));
  } catch (const ft::Error& e) {
    cfg.fail("prompt_template", e.what());
  }
}

// A key torchtune's builder takes only for images: checked so a bad value fails at start-up.
void check_positive(const ft::ConfigNode& cfg, const char* key) {
  const auto n = cfg.get<std::int64_t>(key);
  if (n <= 0) cfg.fail(key, "must be a positive integer, got " + std::to_string(n));
}

// The keys that name the tokenizer's files, read before anything is built (the pre-flight).
ft::Schema with_file_roles(ft::Schema s) {
  for (const char* key : {"path", "merges_file", "vocab_path", "merges_path", "special_tokens_path"})
    if (s.find(key)) s.path(key, ft::PathRole::InputFile);
  return s;
}

std::string toml_string(const std::string& s) { return "\"" + s + "\""; }

const char* const kTemplateHelp = "Llama2ChatTemplate, MistralChatTemplate (torchtune's class paths) or \"\" for none";

void register_components(ft::Registry& reg) {
  {
    auto s = common_schema("tokenizer.json, or Llama 3's tiktoken tokenizer.model");
    s.optional("special_tokens_path", ValueType::String, "",
               "tokenizer.json whose added_tokens replace Llama 3's special tokens (tiktoken files)")
        .optional("prompt_template", ValueType::String, "", "not supported: Llama 3's chat format is built in");
    reg.add<ft::Tokenizer>("torchtune.models.llama3.llama3_tokenizer", with_file_roles(std::move(s)),
                           "Llama 3 tokenizer (tiktoken or tokenizer.json) with the Llama 3 chat format",
                           [](const ft::ConfigNode& cfg, ft::Tokenizer::Args) {
                             refuse_prompt_template(cfg);
                             return ft_tok::make_llama3_tokenizer(cfg.get<std::string>("path"), max_seq_len(cfg),
                                                                  truncation(cfg), special_tokens(cfg));
                           });
  }
#if defined(FTHOST_WITH_IMAGES)
  {
    // torchtune's builder takes no truncation_type (the Llama 3 tokenizer's default, right).
    ft::Schema s;
    s.required("path", ValueType::String, "Llama 3's tiktoken tokenizer.model, or its tokenizer.json")
        .optional("max_seq_len", ValueType::Int, "8192",
                  "truncate tokenized conversations to this many tokens (torchtune's default, 8192)")
        .optional("image_size", ValueType::Int, "560",
                  "tile size in pixels, a multiple of 14: 560 for the Instruct weights, 448 for the pretrained")
        .optional("special_tokens_path", ValueType::String, "",
                  "tokenizer.json whose added_tokens replace Llama 3's special tokens (tiktoken files)")
        .optional("prompt_template", ValueType::String, "", "not supported: Llama 3's chat format is built in");
    reg.add<ft::Tokenizer>("torchtune.models.llama3_2_vision.llama3_2_vision_transform", with_file_roles(std::move(s)),
                           "Llama 3.2 Vision's transform: the Llama 3 tokenizer with <|image|>, and images in up to 4 "
                           "tiles of image_size pixels",
                           [](const ft::ConfigNode& cfg, ft::Tokenizer::Args) {
                             refuse_prompt_template(cfg);
                             const std::int64_t length = cfg.get<std::int64_t>("max_seq_len", 8192);
                             if (length <= 0)
                               cfg.fail("max_seq_len", "must be positive, got " + std::to_string(length));
                             const std::int64_t image_size = cfg.get<std::int64_t>("image_size", 560);
                             if (image_size <= 0 || image_size % 14 != 0)
                               cfg.fail("image_size", "must be a positive multiple of the patch size 14, got " +
                                                          std::to_string(image_size));
                             return ft_tok::make_llama3_vision_transform(
                                 ft_tok::make_llama3_tokenizer(cfg.get<std::string>("path"), length,
                                                               ft_tok::Truncation::Right, special_tokens(cfg)),
                                 image_size);
                           });
  }
#endif
  {
    // torchtune's llama4_transform takes no truncation_type (it always keeps the start).
    ft::Schema s;
    s.required("path", ValueType::String, "Meta's Llama 4 tiktoken tokenizer.model")
        .optional("max_seq_len", ValueType::Int, "",
                  "truncate tokenized conversations to this many tokens; packed datasets' pack length. Left out "
                  "(or null in YAML): no truncation; torchtune's builder means 8192 when the key is left out")
        .optional("image_size", ValueType::Int, "336",
                  "tile size in pixels of image inputs, a multiple of the patch size 14 (multimodal datasets)")
        .optional("max_num_tiles", ValueType::Int, "16",
                  "tiles per image at most, besides the global thumbnail of an image of several tiles "
                  "(multimodal datasets)")
        .optional("special_tokens_path", ValueType::String, "",
                  "tokenizer.json whose added_tokens replace Llama 4's special tokens")
        .optional("prompt_template", ValueType::String, "", "not supported: Llama 4's chat format is built in");
    reg.add<ft::Tokenizer>(
        "torchtune.models.llama4.llama4_transform", with_file_roles(std::move(s)),
        "Llama 4's transform: the Llama 4 tiktoken tokenizer with the Llama 4 chat format, and "
        "images in up to max_num_tiles tiles of image_size pixels and a thumbnail, each image's "
        "tile grid of <|patch|> tokens in the text",
        [](const ft::ConfigNode& cfg, ft::Tokenizer::Args) {
          refuse_prompt_template(cfg);
          check_positive(cfg, "max_num_tiles");
          const std::int64_t image_size = cfg.get<std::int64_t>("image_size");
          if (image_size <= 0 || image_size % 14 != 0)
            cfg.fail("image_size",
                     "must be a positive multiple of the patch size 14, got " + std::to_string(image_size));
          auto text = ft_tok::make_llama4_tokenizer(cfg.get<std::string>("path"), max_seq_len(cfg), special_tokens(cfg),
                                                    special_tokens_path(cfg));
#if defined(FTHOST_WITH_IMAGES)
          return ft_tok::make_llama4_transform(std::move(text), image_size, cfg.get<std::int64_t>("max_num_tiles"));
#else
          return text;  // built without image support: text only
#endif
        });
  }
  {
    auto s = common_schema("vocab.json (with merges_file) or tokenizer.json");
    s.optional("merges_file", ValueType::String, "", "merges.txt, required when path is a vocab.json")
        .optional("special_tokens_path", ValueType::String, "",
                  "tokenizer.json whose added_tokens replace Qwen 2.5's special tokens")
        .optional("prompt_template", ValueType::String, "", "not supported: ChatML is built in");
    reg.add<ft::Tokenizer>("torchtune.models.qwen2_5.qwen2_5_tokenizer", with_file_roles(std::move(s)),
                           "Qwen 2.5 byte-level BPE tokenizer with the ChatML chat format",
                           [](const ft::ConfigNode& cfg, ft::Tokenizer::Args) {
                             refuse_prompt_template(cfg);
                             return ft_tok::make_qwen2_5_tokenizer(
                                 cfg.get<std::string>("path"), cfg.get<std::string>("merges_file", ""),
                                 max_seq_len(cfg), truncation(cfg), special_tokens(cfg));
                           });
  }
  {
    auto s = common_schema("vocab.json (with merges_file) or tokenizer.json");
    s.optional("merges_file", ValueType::String, "", "merges.txt, required when path is a vocab.json")
        .optional("special_tokens_path", ValueType::String, "",
                  "tokenizer.json whose added_tokens replace Qwen 2's three special tokens")
        .optional("prompt_template", ValueType::String, "", "not supported: ChatML is built in");
    reg.add<ft::Tokenizer>("torchtune.models.qwen2.qwen2_tokenizer", with_file_roles(std::move(s)),
                           "Qwen 2 byte-level BPE tokenizer (3 special tokens) with the ChatML chat format",
                           [](const ft::ConfigNode& cfg, ft::Tokenizer::Args) {
                             refuse_prompt_template(cfg);
                             return ft_tok::make_qwen2_tokenizer(
                                 cfg.get<std::string>("path"), cfg.get<std::string>("merges_file", ""),
                                 max_seq_len(cfg), truncation(cfg), special_tokens(cfg));
                           });
  }
  {
    auto s = common_schema("vocab.json (with merges_file) or tokenizer.json");
    s.optional("merges_file", ValueType::String, "", "merges.txt, required when path is a vocab.json")
        .optional("special_tokens_path", ValueType::String, "",
                  "tokenizer.json whose added_tokens replace Qwen 3's special tokens")
        .optional("prompt_template", ValueType::String, "", "not supported: ChatML is built in");
    reg.add<ft::Tokenizer>("torchtune.models.qwen3.qwen3_tokenizer", with_file_roles(std::move(s)),
                           "Qwen 3 byte-level BPE tokenizer (Qwen 2.5's special tokens, <think>, <tool_response>) "
                           "with the ChatML chat format",
                           [](const ft::ConfigNode& cfg, ft::Tokenizer::Args) {
                             refuse_prompt_template(cfg);
                             return ft_tok::make_qwen3_tokenizer(
                                 cfg.get<std::string>("path"), cfg.get<std::string>("merges_file", ""),
                                 max_seq_len(cfg), truncation(cfg), special_tokens(cfg));
                           });
  }
  {
    auto s = common_schema("SentencePiece tokenizer.model, or tokenizer.json");
    s.optional("prompt_template", ValueType::String, toml_string(ft_tok::kLlama2ChatTemplate), kTemplateHelp);
    reg.add<ft::Tokenizer>("torchtune.models.llama2.llama2_tokenizer", with_file_roles(std::move(s)),
                           "Llama 2 SentencePiece tokenizer with the Llama 2 chat template",
                           [](const ft::ConfigNode& cfg, ft::Tokenizer::Args) {
                             return ft_tok::make_llama2_tokenizer(cfg.get<std::string>("path"), max_seq_len(cfg),
                                                                  truncation(cfg), prompt_template(cfg));
                           });
  }
  {
    auto s = common_schema("SentencePiece tokenizer.model, or tokenizer.json");
    s.optional("prompt_template", ValueType::String, toml_string(ft_tok::kMistralChatTemplate), kTemplateHelp);
    reg.add<ft::Tokenizer>("torchtune.models.mistral.mistral_tokenizer", with_file_roles(std::move(s)),
                           "Mistral SentencePiece tokenizer with the Mistral [INST] chat template",
                           [](const ft::ConfigNode& cfg, ft::Tokenizer::Args) {
                             return ft_tok::make_mistral_tokenizer(cfg.get<std::string>("path"), max_seq_len(cfg),
                                                                   truncation(cfg), prompt_template(cfg));
                           });
  }
  {
    auto s = common_schema("SentencePiece tokenizer.model, or tokenizer.json");
    s.optional("prompt_template", ValueType::String, "\"\"", kTemplateHelp);
    reg.add<ft::Tokenizer>("torchtune.models.gemma.gemma_tokenizer", with_file_roles(std::move(s)),
                           "Gemma (and Gemma 2) SentencePiece tokenizer; messages back to back, no chat markup",
                           [](const ft::ConfigNode& cfg, ft::Tokenizer::Args) {
                             return ft_tok::make_gemma_tokenizer(cfg.get<std::string>("path"), max_seq_len(cfg),
                                                                 truncation(cfg), prompt_template(cfg));
                           });
  }
  {
    auto s = common_schema("Phi-3 mini's SentencePiece tokenizer.model, or tokenizer.json");
    s.optional("special_tokens_path", ValueType::String, "",
               "tokenizer.json whose added_tokens replace Phi-3's special tokens")
        .optional("prompt_template", ValueType::String, "", "not supported: Phi-3's chat format is built in");
    reg.add<ft::Tokenizer>("torchtune.models.phi3.phi3_mini_tokenizer", with_file_roles(std::move(s)),
                           "Phi-3 mini SentencePiece tokenizer with Phi-3's <|user|> ... <|end|> chat format",
                           [](const ft::ConfigNode& cfg, ft::Tokenizer::Args) {
                             refuse_prompt_template(cfg);
                             return ft_tok::make_phi3_mini_tokenizer(cfg.get<std::string>("path"), max_seq_len(cfg),
                                                                     truncation(cfg), special_tokens(cfg),
                                                                     special_tokens_path(cfg));
                           });
  }
  {
    ft::Schema s;
    s.required("vocab_path", ValueType::String, "Phi-4's vocab.json")
        .required("merges_path", ValueType::String, "Phi-4's merges.txt");
    add_length_keys(s)
        .optional("special_tokens_path", ValueType::String, "",
                  "tokenizer.json whose added_tokens replace Phi-4's special tokens")
        .optional("prompt_template", ValueType::String, "", "not supported: Phi-4's chat format is built in");
    reg.add<ft::Tokenizer>("torchtune.models.phi4.phi4_tokenizer", with_file_roles(std::move(s)),
                           "Phi-4 byte-level BPE tokenizer (cl100k) with the <|im_start|>role<|im_sep|> chat format",
                           [](const ft::ConfigNode& cfg, ft::Tokenizer::Args) {
                             refuse_prompt_template(cfg);
                             return ft_tok::make_phi4_tokenizer(cfg.get<std::string>("vocab_path"),
                                                                cfg.get<std::string>("merges_path"), max_seq_len(cfg),
                                                                truncation(cfg), special_tokens(cfg));
                           });
  }
}

}  // namespace

FT_PLUGIN("ft_tokenizers", "0.1.0", register_components)
