#include "bpe_pipeline.h"

#include <ft/errors.h>

#include <algorithm>
#include <cctype>

#include "utf8.h"

namespace ft_tok {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  out.reserve(s.size());
  std::size_t pos = 0;
  for (std::size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out.append(to);
  }
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

// "<0x41>" -> 0x41; -1 for any other token.
int byte_fallback_value(const std::string& token) {
  if (token.size() != 6 || token[0] != '<' || token[1] != '0' || token[2] != 'x' || token[5] != '>') return -1;
  auto hex = [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
  };
  const int hi = hex(token[3]), lo = hex(token[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_length(c);
    if (n == 1 && c >= 0x80) return false;
    if (i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

}  // namespace

BpePipeline::BpePipeline(PipelineSpec spec, std::unique_ptr<BpeModel> model)
    : spec_(std::move(spec)), model_(std::move(model)), added_by_first_byte_(256) {
  vocab_size_ = model_->max_id() + 1;
  for (std::size_t i = 0; i < spec_.added_tokens.size(); ++i) {
    const auto& t = spec_.added_tokens[i];
    if (t.content.empty()) throw ft::Error("added token " + std::to_string(t.id) + " has empty content");
    vocab_size_ = std::max<std::int64_t>(vocab_size_, t.id + 1);
    added_by_content_[t.content] = t.id;
    added_by_id_[t.id] = t.content;
    added_by_first_byte_[static_cast<unsigned char>(t.content[0])].push_back(i);
  }
  for (auto& bucket : added_by_first_byte_)
    std::sort(bucket.begin(), bucket.end(), [&](std::size_t a, std::size_t b) {
      return spec_.added_tokens[a].content.size() > spec_.added_tokens[b].content.size();
    });
}

std::optional<std::int64_t> BpePipeline::token_id(std::string_view text) const {
  if (auto it = added_by_content_.find(std::string(text)); it != added_by_content_.end()) return it->second;
  if (auto id = model_->token_to_id(text)) return *id;
  return std::nullopt;
}

std::vector<std::int64_t> BpePipeline::encode(std::string_view text) const {
  std::vector<std::int64_t> out;
  out.reserve(text.size() / 3 + 4);
  if (!spec_.split_added_tokens || spec_.added_tokens.empty()) {
    encode_segment(text, true, out);
    return out;
  }
  std::size_t segment_start = 0;
  bool first = true;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto& bucket = added_by_first_byte_[static_cast<unsigned char>(text[i])];
    const AddedToken* hit = nullptr;
    for (std::size_t k : bucket) {
      const auto& t = spec_.added_tokens[k];
      if (text.compare(i, t.content.size(), t.content) == 0) {
        hit = &t;
        break;
      }
    }
    if (!hit) continue;
    std::size_t segment_end = i, resume = i + hit->content.size();
    if (hit->lstrip)
      while (segment_end > segment_start && is_space(text[segment_end - 1])) --segment_end;
    if (hit->rstrip)
      while (resume < text.size() && is_space(text[resume])) ++resume;
    if (segment_end > segment_start)
      encode_segment(text.substr(segment_start, segment_end - segment_start), first, out);
    out.push_back(hit->id);
    first = false;
    segment_start = resume;
    i = resume - 1;
  }
  if (segment_start < text.size()) encode_segment(text.substr(segment_start), first, out);
  return out;
}

std::string BpePipeline::normalize(std::string_view text) const {
  std::string s(text);
  for (const auto& step : spec_.normalizers) {
    switch (step.kind) {
      case NormalizerStep::Kind::Unicode: s = normalize_unicode(s, step.form); break;
      case NormalizerStep::Kind::Prepend:
        if (!s.empty()) s.insert(0, step.text);
        break;
      case NormalizerStep::Kind::Replace: replace_all(s, step.text, step.replacement); break;
    }
  }
  return s;
}

std::vector<std::string> BpePipeline::pre_tokenize(std::string normalized, bool first_segment) const {
  std::vector<std::string> pieces;
  pieces.push_back(std::move(normalized));
  std::vector<std::string_view> views;
  for (const auto& step : spec_.pre_tokenizers) {
    std::vector<std::string> next;
    next.reserve(pieces.size());
    for (auto& piece : pieces) {
      switch (step.kind) {
        case PreTokenizerStep::Kind::Split:
          views.clear();
          step.regex->matches(piece, views, step.keep_gaps);
          for (auto v : views) next.emplace_back(v);
          break;
        case PreTokenizerStep::Kind::ByteLevel:
          if (step.add_prefix_space && (piece.empty() || piece[0] != ' ')) piece.insert(0, " ");
          if (step.regex) {
            views.clear();
            step.regex->split(piece, views);
            for (auto v : views) next.emplace_back(v);
          } else {
            next.push_back(std::move(piece));
          }
          break;
        case PreTokenizerStep::Kind::Metaspace: {
          replace_all(piece, " ", step.replacement);
          const bool prepend =
              step.prepend == PreTokenizerStep::Prepend::Always ||
              (step.prepend == PreTokenizerStep::Prepend::First && first_segment && &piece == &pieces.front());
          if (prepend && piece.compare(0, step.replacement.size(), step.replacement) != 0)
            piece.insert(0, step.replacement);
          if (!step.split) {
            next.push_back(std::move(piece));
            break;
          }
          std::size_t start = 0;
          for (std::size_t hit = piece.find(step.replacement, 1); hit != std::string::npos;
               hit = piece.find(step.replacement, hit + step.replacement.size())) {
            if (hit > start) next.push_back(piece.substr(start, hit - start));
            start = hit;
          }
          if (start < piece.size()) next.push_back(piece.substr(start));
          break;
        }
      }
    }
    pieces.swap(next);
  }
  return pieces;
}

void BpePipeline::encode_segment(std::string_view segment, bool first_segment, std::vector<std::int64_t>& out) const {
  if (spec_.pre_tokenizers.size() == 1 && spec_.pre_tokenizers[0].kind == PreTokenizerStep::Kind::Split) {
    // The common byte-level case (Llama 3, Qwen): words are views of the (normalized) text.
    std::string normalized;
    if (!spec_.normalizers.empty()) normalized = normalize(segment);
    const std::string_view source = spec_.normalizers.empty() ? segment : std::string_view(normalized);
    std::vector<std::string_view> views;
    spec_.pre_tokenizers[0].regex->matches(source, views, spec_.pre_tokenizers[0].keep_gaps);
    for (auto v : views) model_->encode_word(v, out);
    return;
  }
  for (const auto& word : pre_tokenize(normalize(segment), first_segment)) model_->encode_word(word, out);
}

std::string BpePipeline::decode(const std::vector<std::int64_t>& ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (auto id : ids) {
    if (auto it = added_by_id_.find(static_cast<TokenId>(id)); it != added_by_id_.end()) {
      tokens.push_back(it->second);
    } else if (const std::string* t = model_->id_to_token(id)) {
      tokens.push_back(*t);
    } else {
      throw ft::Error("cannot decode token id " + std::to_string(id) + ": the vocabulary has " +
                      std::to_string(vocab_size_) + " ids");
    }
  }
  for (const auto& step : spec_.decoders) {
    switch (step.kind) {
      case DecoderStep::Kind::ByteLevel:
      case DecoderStep::Kind::Fuse: {
        std::string all;
        for (const auto& t : tokens) all += t;
        tokens.clear();
        tokens.push_back(std::move(all));
        break;
      }
      case DecoderStep::Kind::Replace:
        for (auto& t : tokens) replace_all(t, step.pattern, step.content);
        break;
      case DecoderStep::Kind::ByteFallback: {
        std::vector<std::string> next;
        std::string bytes;
        std::size_t pending = 0;
        auto flush = [&] {
          if (!pending) return;
          if (valid_utf8(bytes)) {
            next.push_back(bytes);
          } else {
            for (std::size_t k = 0; k < pending; ++k) next.emplace_back("\xEF\xBF\xBD");
          }
          bytes.clear();
          pending = 0;
        };
        for (auto& t : tokens) {
          const int b = byte_fallback_value(t);
          if (b >= 0) {
            bytes += static_cast<char>(b);
            ++pending;
          } else {
            flush();
            next.push_back(std::move(t));
          }
        }
        flush();
        tokens.swap(next);
        break;
      }
      case DecoderStep::Kind::Strip:
        for (auto& t : tokens) {
          int n = 0;
          while (n < step.start && t.compare(0, step.content.size(), step.content) == 0) {
            t.erase(0, step.content.size());
            ++n;
          }
          n = 0;
          while (n < step.stop && t.size() >= step.content.size() &&
                 t.compare(t.size() - step.content.size(), step.content.size(), step.content) == 0) {
            t.erase(t.size() - step.content.size());
            ++n;
          }
        }
        break;
      case DecoderStep::Kind::Metaspace:
        for (std::size_t i = 0; i < tokens.size(); ++i) {
          replace_all(tokens[i], step.content, " ");
          if (i == 0 && step.strip_first_space && !tokens[i].empty() && tokens[i][0] == ' ') tokens[i].erase(0, 1);
        }
        break;
    }
  }
  std::string text;
  for (const auto& t : tokens) text += t;
  return text;
}

}  // namespace ft_tok
