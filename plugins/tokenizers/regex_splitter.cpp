#include "regex_splitter.h"

#include <ft/errors.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "utf8.h"

namespace ft_tok {

struct RegexSplitter::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() {
    if (code) pcre2_code_free(code);
  }
};

namespace {
std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

struct MatchData {
  pcre2_match_data* data;
  explicit MatchData(pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(data); }
};
}  // namespace

RegexSplitter::RegexSplitter(const std::string& pattern) : compiled_(std::make_unique<Compiled>()), pattern_(pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                                  &error, &offset, nullptr);
  if (!compiled_->code)
    throw ft::Error("pre-tokenizer regex does not compile at offset " + std::to_string(offset) + ": " +
                    pcre2_message(error) + " (pattern " + pattern + ")");
  compiled_->jit = pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE) == 0;
}

RegexSplitter::~RegexSplitter() = default;

void RegexSplitter::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  matches(text, pieces, true);
}

void RegexSplitter::matches(std::string_view text, std::vector<std::string_view>& pieces, bool keep_gaps) const {
  MatchData md(compiled_->code);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t pos = 0, gap_start = 0;
  std::uint32_t options = 0;
  while (pos < text.size()) {
    const int rc = compiled_->jit
                       ? pcre2_jit_match(compiled_->code, subject, text.size(), pos, options, md.data, nullptr)
                       : pcre2_match(compiled_->code, subject, text.size(), pos, options, md.data, nullptr);
    // The subject is checked for valid UTF-8 once, on the first call.
    options = PCRE2_NO_UTF_CHECK;
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      if (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21)
        throw ft::Error("text is not valid UTF-8 (" + pcre2_message(rc) + ")");
      throw ft::Error("pre-tokenizer regex failed: " + pcre2_message(rc) + " (pattern " + pattern_ + ")");
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.data);
    const std::size_t start = ov[0], end = ov[1];
    if (end == start) {  // an empty match: step over one character
      pos = start;
      next_code_point(text, pos);
      continue;
    }
    if (keep_gaps && start > gap_start) pieces.push_back(text.substr(gap_start, start - gap_start));
    pieces.push_back(text.substr(start, end - start));
    pos = gap_start = end;
  }
  if (keep_gaps && gap_start < text.size()) pieces.push_back(text.substr(gap_start));
}

}  // namespace ft_tok
