// tokenizer.json: the subset of Hugging Face `tokenizers` that LLM checkpoints use: a BPE model,
// NFC/NFKC/Prepend/Replace normalizers, Split/ByteLevel/Metaspace pre-tokenizers and
// ByteLevel/Replace/ByteFallback/Fuse/Strip/Metaspace decoders. Anything else is refused by name.
#include <ft/errors.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>

#include "bpe_loaders.h"
#include "tokenizer_factories.h"
#include "utf8.h"

namespace ft_tok {

namespace {

// A token id as JSON holds it: an integer in [0, 2^31 - 1) (one more than the largest id must fit
// the id type too). nlohmann's get<int> of a float or an
// out-of-range integer is undefined behaviour, so anything else is refused here.
// `where` names the entry, and is only called for an error message.
template <class Where>
TokenId token_id(const nlohmann::json& id, Where&& where) {
  const bool fits = (id.is_number_unsigned() && id.get<std::uint64_t>() < std::numeric_limits<TokenId>::max()) ||
                    (id.is_number_integer() && !id.is_number_unsigned() && id.get<std::int64_t>() >= 0 &&
                     id.get<std::int64_t>() < std::numeric_limits<TokenId>::max());
  if (!fits) throw ft::Error(where() + ": expected a token id, an integer from 0 to 2147483646; got " + id.dump());
  return static_cast<TokenId>(id.get<std::int64_t>());
}

using nlohmann::json;

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}
  [[noreturn]] void fail(const std::string& where, const std::string& message) const {
    throw ft::Error(path_ + ": " + where + ": " + message);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string string_pattern(const Reader& r, const json& pattern, const std::string& where, bool allow_regex) {
  if (pattern.is_object() && pattern.contains("String")) return pattern["String"].get<std::string>();
  if (allow_regex && pattern.is_object() && pattern.contains("Regex")) return pattern["Regex"].get<std::string>();
  r.fail(where, "expected {\"String\": ...}" + std::string(allow_regex ? " or {\"Regex\": ...}" : "") + ", got " +
                    pattern.dump());
}

void add_normalizer(const Reader& r, const json& n, const std::string& where, std::vector<NormalizerStep>& out) {
  if (n.is_null()) return;
  const std::string type = n.value("type", "");
  if (type == "Sequence") {
    std::size_t i = 0;
    for (const auto& child : n.at("normalizers"))
      add_normalizer(r, child, where + ".normalizers[" + std::to_string(i++) + "]", out);
  } else if (type == "NFC" || type == "NFKC" || type == "NFD" || type == "NFKD") {
    NormalizerStep s;
    s.form = type == "NFC"    ? NormalForm::NFC
             : type == "NFKC" ? NormalForm::NFKC
             : type == "NFD"  ? NormalForm::NFD
                              : NormalForm::NFKD;
    out.push_back(s);
  } else if (type == "Prepend") {
    out.push_back({NormalizerStep::Kind::Prepend, NormalForm::NFC, n.at("prepend").get<std::string>(), {}});
  } else if (type == "Replace") {
    out.push_back({NormalizerStep::Kind::Replace, NormalForm::NFC,
                   string_pattern(r, n.at("pattern"), where + ".pattern", false), n.at("content").get<std::string>()});
  } else {
    r.fail(where, "unsupported normalizer type \"" + type +
                      "\" (supported: Sequence, NFC, NFKC, NFD, NFKD, Prepend, Replace)");
  }
}

void add_pre_tokenizer(const Reader& r, const json& p, const std::string& where, std::vector<PreTokenizerStep>& out,
                       bool& byte_level) {
  if (p.is_null()) return;
  const std::string type = p.value("type", "");
  if (type == "Sequence") {
    std::size_t i = 0;
    for (const auto& child : p.at("pretokenizers"))
      add_pre_tokenizer(r, child, where + ".pretokenizers[" + std::to_string(i++) + "]", out, byte_level);
  } else if (type == "Split") {
    if (p.value("invert", false)) r.fail(where, "Split with invert = true is not supported");
    const std::string behavior = p.value("behavior", "Isolated");
    if (behavior != "Isolated" && behavior != "Removed")
      r.fail(where, "Split behavior \"" + behavior + "\" is not supported (supported: Isolated, Removed)");
    PreTokenizerStep s;
    s.kind = PreTokenizerStep::Kind::Split;
    s.regex = std::make_shared<RegexSplitter>(string_pattern(r, p.at("pattern"), where + ".pattern", true));
    s.keep_gaps = behavior == "Isolated";
    out.push_back(std::move(s));
  } else if (type == "ByteLevel") {
    byte_level = true;
    PreTokenizerStep s;
    s.kind = PreTokenizerStep::Kind::ByteLevel;
    s.add_prefix_space = p.value("add_prefix_space", false);
    if (p.value("use_regex", true)) s.regex = std::make_shared<RegexSplitter>(kGpt2Pattern);
    // Byte-level words are encoded from their raw bytes, so without a prefix space or a regex
    // the step changes nothing.
    if (s.add_prefix_space || s.regex) out.push_back(std::move(s));
  } else if (type == "Metaspace") {
    PreTokenizerStep s;
    s.kind = PreTokenizerStep::Kind::Metaspace;
    s.replacement = p.value("replacement", std::string("\xE2\x96\x81"));
    // Splitting at every occurrence of "" would never advance.
    if (s.replacement.empty()) r.fail(where + ".replacement", "must not be empty (Hugging Face uses one character)");
    const std::string scheme = p.value("prepend_scheme", p.value("add_prefix_space", true) ? "always" : "never");
    if (scheme == "always")
      s.prepend = PreTokenizerStep::Prepend::Always;
    else if (scheme == "first")
      s.prepend = PreTokenizerStep::Prepend::First;
    else if (scheme == "never")
      s.prepend = PreTokenizerStep::Prepend::Never;
    else
      r.fail(where, "unknown Metaspace prepend_scheme \"" + scheme + "\"");
    s.split = p.value("split", true);
    out.push_back(std::move(s));
  } else {
    r.fail(where, "unsupported pre_tokenizer type \"" + type + "\" (supported: Sequence, Split, ByteLevel, Metaspace)");
  }
}

void add_decoder(const Reader& r, const json& d, const std::string& where, std::vector<DecoderStep>& out) {
  if (d.is_null()) return;
  const std::string type = d.value("type", "");
  DecoderStep s;
  if (type == "Sequence") {
    std::size_t i = 0;
    for (const auto& child : d.at("decoders"))
      add_decoder(r, child, where + ".decoders[" + std::to_string(i++) + "]", out);
    return;
  } else if (type == "ByteLevel") {
    s.kind = DecoderStep::Kind::ByteLevel;
  } else if (type == "Replace") {
    s.kind = DecoderStep::Kind::Replace;
    s.pattern = string_pattern(r, d.at("pattern"), where + ".pattern", false);
    s.content = d.at("content").get<std::string>();
  } else if (type == "ByteFallback") {
    s.kind = DecoderStep::Kind::ByteFallback;
  } else if (type == "Fuse") {
    s.kind = DecoderStep::Kind::Fuse;
  } else if (type == "Strip") {
    s.kind = DecoderStep::Kind::Strip;
    s.content = d.at("content").get<std::string>();
    s.start = d.value("start", 0);
    s.stop = d.value("stop", 0);
  } else if (type == "Metaspace") {
    s.kind = DecoderStep::Kind::Metaspace;
    s.content = d.value("replacement", std::string("\xE2\x96\x81"));
    const std::string scheme = d.value("prepend_scheme", d.value("add_prefix_space", true) ? "always" : "never");
    s.strip_first_space = scheme != "never";
  } else {
    r.fail(where, "unsupported decoder type \"" + type +
                      "\" (supported: Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace)");
  }
  out.push_back(std::move(s));
}

// Byte-level vocabularies spell bytes as printable characters; the model works on raw bytes.
std::string raw_token(const ByteLevelAlphabet& alphabet, const std::string& spelled, bool byte_level) {
  if (!byte_level) return spelled;
  std::string raw;
  return alphabet.decode(spelled, raw) ? raw : spelled;
}

}  // namespace

std::unique_ptr<BpePipeline> load_hf_tokenizer_json(const std::string& path) {
  const Reader r(path);
  json j;
  try {
    j = json::parse(read_text_file(path, "tokenizer.json"));
  } catch (const json::exception& e) {
    r.fail("(file)", std::string("not valid JSON: ") + e.what());
  }
  try {
    const json& model = j.at("model");
    const std::string type = model.value("type", "BPE");
    if (type != "BPE") r.fail("model.type", "only BPE tokenizers are supported, this one is \"" + type + "\"");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty())
        r.fail(std::string("model.") + key, "non-empty values are not supported");
    if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"].get<double>() > 0)
      r.fail("model.dropout", "BPE dropout is for training tokenizers; set it to null");

    PipelineSpec spec;
    bool byte_level = false;
    add_normalizer(r, j.value("normalizer", json()), "normalizer", spec.normalizers);
    add_pre_tokenizer(r, j.value("pre_tokenizer", json()), "pre_tokenizer", spec.pre_tokenizers, byte_level);
    add_decoder(r, j.value("decoder", json()), "decoder", spec.decoders);

    const ByteLevelAlphabet alphabet;
    std::unordered_map<std::string, TokenId> vocab;
    vocab.reserve(model.at("vocab").size());
    for (const auto& entry : model.at("vocab").items()) {
      const std::string& spelled = entry.key();
      vocab.emplace(raw_token(alphabet, spelled, byte_level),
                    token_id(entry.value(), [&] { return "model.vocab[\"" + spelled + "\"]"; }));
    }

    std::vector<std::pair<std::string, std::string>> merges;
    const json& jm = model.value("merges", json::array());
    merges.reserve(jm.size());
    for (std::size_t i = 0; i < jm.size(); ++i) {
      std::string a, b;
      if (jm[i].is_string()) {
        const std::string m = jm[i].get<std::string>();
        const auto space = m.find(' ', 1);
        if (space == std::string::npos)
          r.fail("model.merges[" + std::to_string(i) + "]", "expected \"left right\", got \"" + m + "\"");
        a = m.substr(0, space);
        b = m.substr(space + 1);
      } else if (jm[i].is_array() && jm[i].size() == 2) {
        a = jm[i][0].get<std::string>();
        b = jm[i][1].get<std::string>();
      } else {
        r.fail("model.merges[" + std::to_string(i) + "]",
               "expected a \"left right\" string or a pair, got " + jm[i].dump());
      }
      merges.emplace_back(raw_token(alphabet, a, byte_level), raw_token(alphabet, b, byte_level));
    }

    BpeOptions options;
    options.alphabet = byte_level ? BpeOptions::Alphabet::Bytes : BpeOptions::Alphabet::Characters;
    options.ignore_merges = model.value("ignore_merges", false);
    options.byte_fallback = model.value("byte_fallback", false);
    options.fuse_unk = model.value("fuse_unk", false);
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      const std::string unk = model["unk_token"].get<std::string>();
      auto it = vocab.find(unk);
      if (it == vocab.end()) r.fail("model.unk_token", "\"" + unk + "\" is not in the vocabulary");
      options.unk_id = it->second;
    }

    for (const auto& t : j.value("added_tokens", json::array())) {
      AddedToken a;
      a.content = t.at("content").get<std::string>();
      a.id = token_id(t.at("id"), [&] { return "added_tokens: \"" + a.content + "\""; });
      a.special = t.value("special", false);
      a.lstrip = t.value("lstrip", false);
      a.rstrip = t.value("rstrip", false);
      spec.added_tokens.push_back(std::move(a));
    }
    auto bpe = std::make_unique<BpeModel>(std::move(vocab), merges, options);
    return std::make_unique<BpePipeline>(std::move(spec), std::move(bpe));
  } catch (const json::exception& e) {
    r.fail("(structure)", std::string("unexpected tokenizer.json layout: ") + e.what());
  } catch (const ft::Error& e) {
    const std::string what = e.what();
    if (what.rfind(path, 0) == 0) throw;
    throw ft::Error(path + ": " + what);
  }
}

std::vector<AddedToken> load_added_tokens(const std::string& path) {
  json j;
  try {
    j = json::parse(read_text_file(path, "special tokens file (tokenizer.json)"));
  } catch (const json::exception& e) {
    throw ft::Error(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  if (!j.contains("added_tokens") || !j["added_tokens"].is_array())
    throw ft::Error(path + ": expected an \"added_tokens\" list (a Hugging Face tokenizer.json)");
  std::vector<AddedToken> out;
  for (const auto& t : j["added_tokens"]) {
    if (!t.contains("content") || !t.contains("id"))
      throw ft::Error(path + ": added token without content or id: " + t.dump());
    out.push_back({t["content"].get<std::string>(), token_id(t["id"], [&] { return path + ": added_tokens"; })});
  }
  return out;
}

}  // namespace ft_tok
