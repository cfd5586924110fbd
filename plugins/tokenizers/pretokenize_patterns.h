// The pre-tokenizer regexes of the byte-level BPE families, as torchtune spells them.
#pragma once

namespace ft_tok {

// OpenAI's cl100k_base split: torchtune's CL100K_PATTERN (Phi-4) and Llama 3's tiktoken pattern.
// Letters and digits apart, digits in runs of at most three, contractions case-insensitive.
inline constexpr const char* kCl100kPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// torchtune's Qwen2 PRETOKENIZE_REGEX: cl100k's with single digits.
inline constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Llama 4's split (Meta's O200K_PATTERN, torchtune's llama4 O200K_PATTERN): a word may start with
// capitals and ends at the next capital after lower case ("HelloWorld" is two), marks belong to
// letters, a contraction stays on its word in any case, and "/" joins the punctuation before it.
inline constexpr const char* kLlama4Pattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

}  // namespace ft_tok
