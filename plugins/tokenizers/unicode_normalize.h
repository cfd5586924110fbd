// Unicode normalization forms (ICU), for the NFC / NFKC normalizers of tokenizer.json.
#pragma once

#include <string>
#include <string_view>

namespace ft_tok {

enum class NormalForm { NFC, NFKC, NFD, NFKD };

// `text` in the given form; ASCII text is returned unchanged without calling ICU.
std::string normalize_unicode(std::string_view text, NormalForm form);

}  // namespace ft_tok
