// Constructors of the model-family tokenizers, one per source file, used by the plugin's registration.
#pragma once

#include <ft/tokenizer.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bpe_pipeline.h"
#include "model_tokenizer.h"
#include "prompt_template.h"

namespace ft_tok {

// `special_tokens`: replaces the family's default special tokens (torchtune's special_tokens_path).
std::unique_ptr<ft::Tokenizer> make_llama3_tokenizer(const std::string& path, std::int64_t max_seq_len,
                                                     Truncation truncation,
                                                     std::optional<std::vector<AddedToken>> special_tokens);
std::unique_ptr<ft::Tokenizer> make_qwen2_5_tokenizer(const std::string& path, const std::string& merges_file,
                                                      std::int64_t max_seq_len, Truncation truncation,
                                                      std::optional<std::vector<AddedToken>> special_tokens);
std::unique_ptr<ft::Tokenizer> make_qwen2_tokenizer(const std::string& path, const std::string& merges_file,
                                                    std::int64_t max_seq_len, Truncation truncation,
                                                    std::optional<std::vector<AddedToken>> special_tokens);
std::unique_ptr<ft::Tokenizer> make_qwen3_tokenizer(const std::string& path, const std::string& merges_file,
                                                    std::int64_t max_seq_len, Truncation truncation,
                                                    std::optional<std::vector<AddedToken>> special_tokens);
std::unique_ptr<ft::Tokenizer> make_llama2_tokenizer(const std::string& path, std::int64_t max_seq_len,
                                                     Truncation truncation, PromptTemplate prompt_template);
std::unique_ptr<ft::Tokenizer> make_mistral_tokenizer(const std::string& path, std::int64_t max_seq_len,
                                                      Truncation truncation, PromptTemplate prompt_template);
std::unique_ptr<ft::Tokenizer> make_gemma_tokenizer(const std::string& path, std::int64_t max_seq_len,
                                                    Truncation truncation, PromptTemplate prompt_template);
// `special_tokens_path`: where `special_tokens` came from, for errors.
std::unique_ptr<ft::Tokenizer> make_phi3_mini_tokenizer(const std::string& path, std::int64_t max_seq_len,
                                                        Truncation truncation,
                                                        std::optional<std::vector<AddedToken>> special_tokens,
                                                        const std::string& special_tokens_path);
// torchtune's llama4_transform's text half: Meta's tiktoken tokenizer.model, right truncation.
std::unique_ptr<ft::Tokenizer> make_llama4_tokenizer(const std::string& path, std::int64_t max_seq_len,
                                                     std::optional<std::vector<AddedToken>> special_tokens,
                                                     const std::string& special_tokens_path);
std::unique_ptr<ft::Tokenizer> make_phi4_tokenizer(const std::string& vocab_path, const std::string& merges_path,
                                                   std::int64_t max_seq_len, Truncation truncation,
                                                   std::optional<std::vector<AddedToken>> special_tokens);

// torchtune's llama3_2_vision_transform: `text` (a Llama 3 tokenizer) and the tiles of
// image_size-pixel tiles (tokenizers built with image support only: FTHOST_WITH_IMAGES).
std::unique_ptr<ft::Tokenizer> make_llama3_vision_transform(std::unique_ptr<ft::Tokenizer> text,
                                                            std::int64_t image_size);
// torchtune's llama4_transform with images: `text` (a Llama 4 tokenizer), tiles of image_size
// pixels, at most max_num_tiles of them and a thumbnail (tokenizers built with image support
// only: FTHOST_WITH_IMAGES).
std::unique_ptr<ft::Tokenizer> make_llama4_transform(std::unique_ptr<ft::Tokenizer> text, std::int64_t image_size,
                                                     std::int64_t max_num_tiles);
// The `added_tokens` of a tokenizer.json (torchtune's parse_hf_tokenizer_json).
std::vector<AddedToken> load_added_tokens(const std::string& tokenizer_json_path);

}  // namespace ft_tok
