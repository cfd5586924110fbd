#include "unicode_normalize.h"

#include <ft/errors.h>

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include "utf8.h"

namespace ft_tok {

std::string normalize_unicode(std::string_view text, NormalForm form) {
  if (is_ascii(text)) return std::string(text);
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer = nullptr;
  switch (form) {
    case NormalForm::NFC: normalizer = icu::Normalizer2::getNFCInstance(status); break;
    case NormalForm::NFKC: normalizer = icu::Normalizer2::getNFKCInstance(status); break;
    case NormalForm::NFD: normalizer = icu::Normalizer2::getNFDInstance(status); break;
    case NormalForm::NFKD: normalizer = icu::Normalizer2::getNFKDInstance(status); break;
  }
  if (U_FAILURE(status)) throw ft::Error(std::string("ICU normalizer unavailable: ") + u_errorName(status));
  std::string out;
  out.reserve(text.size());
  icu::StringByteSink<std::string> sink(&out);
  normalizer->normalizeUTF8(0, icu::StringPiece(text.data(), static_cast<std::int32_t>(text.size())), sink, nullptr,
                            status);
  if (U_FAILURE(status)) throw ft::Error(std::string("Unicode normalization failed: ") + u_errorName(status));
  return out;
}

}  // namespace ft_tok
