// torchtune.models.llama4.llama4_transform (text) on Llama 4's published tokenizer.model against
// Meta's own implementation (llama_models' Tokenizer and ChatFormat, pinned in
// scripts/tokenizer-fixture-requirements.txt): every text of a corpus of a few hundred (the other
// families' texts, case-split words, contractions in capitals, "/" runs, digits, CJK, marks, emoji,
// whitespace runs, special-token text, and runs long enough for Meta's encode to cut them), each
// conversation rendered message by message as Meta's ChatFormat renders it in torchtune's framing
// (BOS, masks, EOS, truncation), and Meta's 2048 special tokens, BOS, EOS, pad and stop ids.
//
// scripts/tokenizer_fixtures.py writes the files and expected ids to build/tokenizer_fixtures/llama4
// (or $FT_TOKENIZER_FIXTURES/llama4); the tokenizer.model comes out of Meta's llama-models wheel,
// checked against the published file's SHA-256.
#include "config/config_loader.h"
#include "published_tokenizers.h"

#include <ft/errors.h>

#include <map>

namespace {

using fttest::error_of;
using fttest::quoted;
namespace published = fttest::published;

const char* const kComponent = "torchtune.models.llama4.llama4_transform";

std::shared_ptr<ft::Tokenizer> llama4(const std::string& keys = "") {
  return fttest::make_tokenizer(kComponent,
                                "path = " + quoted(published::file("llama4", "tokenizer.model")) + "\n" + keys);
}

// A text for a failure message: long ones cut (at a character boundary) with their length.
std::string shown(const std::string& text) {
  if (text.size() <= 80) return quoted(text);
  std::size_t end = 80;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return quoted(text.substr(0, end)) + "... (" + std::to_string(text.size()) + " bytes)";
}

std::vector<ft::Message> messages_of(const nlohmann::json& turns) {
  std::vector<ft::Message> messages;
  for (const auto& t : turns) {
    ft::Message m{t.at("role").get<std::string>(), t.at("content").get<std::string>(), t.at("masked").get<bool>()};
    m.ipython = t.at("ipython").get<bool>();
    m.eot = t.at("eot").get<bool>();
    messages.push_back(std::move(m));
  }
  return messages;
}

TEST(Llama4Tokenizer, EncodesAndDecodesEveryTextAsMeta) {
  const auto rows = published::read_jsonl("llama4", "expected_ids.jsonl");
  const auto meta = published::meta("llama4");
  ASSERT_GE(rows.size(), 300u) << "a few hundred texts";
  EXPECT_EQ(rows.size(), meta.at("texts").get<std::size_t>());
  auto tok = llama4();
  int wrong = 0;
  std::size_t long_texts = 0;
  for (const auto& r : rows) {
    const auto text = r.at("text").get<std::string>();
    const auto ids = r.at("ids").get<std::vector<std::int64_t>>();
    const auto got = tok->encode(text, false, false);
    EXPECT_EQ(got, ids) << "text: " << shown(text);
    EXPECT_EQ(tok->decode(ids), r.at("decoded").get<std::string>()) << "ids of " << shown(text);
    wrong += got != ids;
    long_texts += text.size() > 25000;
  }
  EXPECT_EQ(wrong, 0) << "of " << rows.size() << " texts";
  // The texts whose ids depend on where Meta's encode cuts runs of 25,000 characters and texts of
  // 400,000 are there (the fixture script checks that tiktoken on the uncut text disagrees).
  EXPECT_EQ(long_texts, meta.at("long_texts").get<std::size_t>());
}

TEST(Llama4Tokenizer, RendersEveryConversationAsMetasChatFormat) {
  const auto rows = published::read_jsonl("llama4", "chat.jsonl");
  EXPECT_EQ(rows.size(), published::meta("llama4").at("conversations").get<std::size_t>());
  std::map<std::int64_t, std::shared_ptr<ft::Tokenizer>> tokenizers;  // by max_seq_len
  std::size_t tool_headers = 0;
  for (const auto& r : rows) {
    const auto name = r.at("name").get<std::string>();
    const std::int64_t max_seq_len = r.at("max_seq_len").is_null() ? 0 : r.at("max_seq_len").get<std::int64_t>();
    auto& tok = tokenizers[max_seq_len];
    if (!tok) tok = llama4(max_seq_len > 0 ? "max_seq_len = " + std::to_string(max_seq_len) + "\n" : "");
    const auto messages = messages_of(r.at("turns"));
    for (const auto& m : messages) tool_headers += m.role == "tool";
    const auto out = tok->tokenize_messages(messages, r.at("add_end_tokens").get<bool>());
    EXPECT_EQ(out.tokens, r.at("tokens").get<std::vector<std::int64_t>>()) << name;
    EXPECT_EQ(out.mask, r.at("mask").get<std::vector<bool>>()) << name;
    if (r.contains("decoded")) {
      EXPECT_EQ(tok->decode(out.tokens), r.at("decoded").get<std::string>()) << name;
    }
    if (max_seq_len > 0) {
      EXPECT_LE(static_cast<std::int64_t>(out.tokens.size()), max_seq_len) << name;
    }
  }
  EXPECT_GT(tool_headers, 0u) << "an OpenAI-style \"tool\" message (Meta's ipython header) is among the conversations";
}

TEST(Llama4Tokenizer, SpecialTokensAsMeta) {
  const auto meta = published::meta("llama4");
  auto tok = llama4();
  EXPECT_EQ(tok->bos_id(), meta.at("bos_id").get<std::int64_t>());
  EXPECT_EQ(tok->eos_id(), meta.at("eos_id").get<std::int64_t>());
  EXPECT_EQ(tok->pad_id(), meta.at("pad_id").get<std::int64_t>());
  EXPECT_EQ(tok->vocab_size(), meta.at("vocab_size").get<std::int64_t>());
  EXPECT_EQ(tok->stop_tokens(), meta.at("stop_tokens").get<std::vector<std::int64_t>>());
  const auto& with_bos_eos = meta.at("encode_with_bos_eos");
  EXPECT_EQ(tok->encode(with_bos_eos.at("text").get<std::string>(), true, true),
            with_bos_eos.at("ids").get<std::vector<std::int64_t>>());
  const auto& table = meta.at("special_tokens");
  EXPECT_EQ(table.size(), 2048u);
  for (const auto& [name, id] : table.items()) EXPECT_EQ(tok->special_token(name), id.get<std::int64_t>()) << name;
  // torchtune's Llama4Tokenizer names ids 200016 and 200017 as reserved tokens; Meta's (and the
  // published tokenizer.json's) names are <|python_start|> and <|python_end|>.
  for (const char* torchtune_name :
       {"<|text_post_train_reserved_special_token_6|>", "<|text_post_train_reserved_special_token_7|>"}) {
    EXPECT_FALSE(table.contains(torchtune_name));
    EXPECT_FALSE(tok->special_token(torchtune_name)) << torchtune_name;
  }
}

// torchtune's scout_17B_16E_full.yaml names the transform with exactly these keys; its
// `max_seq_len: null` is no truncation.
TEST(Llama4Tokenizer, TorchtuneScoutConfigTable) {
  const auto yaml = "tokenizer:\n  _component_: " + std::string(kComponent) +
                    "\n  path: " + published::file("llama4", "tokenizer.model") +
                    "\n  max_seq_len: null\n  max_num_tiles: 16\n";
  const auto root = ft::detail::root_node(fthost::load_config(fttest::write_temp("scout.yaml", yaml), {}));
  const auto tok = fttest::builtin_registry().instantiate<ft::Tokenizer>(root.table("tokenizer"));
  EXPECT_EQ(tok->max_seq_len(), 0);
  // A conversation past torchtune's builder default (8192) stays whole.
  std::string long_answer;
  for (int i = 0; i < 5000; ++i) long_answer += "word" + std::to_string(i) + " ";
  const auto out = tok->tokenize_messages({{"user", "Count.", true}, {"assistant", long_answer}}, true);
  EXPECT_GT(out.tokens.size(), 8192u);
  EXPECT_FALSE(out.truncated);
  EXPECT_EQ(out.tokens.back(), tok->eos_id());
}

TEST(Llama4Tokenizer, RefusesKeysItCannotHonour) {
  // Image settings are checked even though no dataset here carries images.
  EXPECT_NE(error_of([] { llama4("image_size = 0\n"); }).find("image_size"), std::string::npos);
  EXPECT_NE(error_of([] { llama4("max_num_tiles = -4\n"); }).find("max_num_tiles"), std::string::npos);
  EXPECT_NO_THROW(llama4("image_size = 448\nmax_num_tiles = 4\n"));
  EXPECT_NE(error_of([] { llama4("prompt_template = \"torchtune.data.ChatMLTemplate\"\n"); }).find("prompt_template"),
            std::string::npos);
  EXPECT_NE(error_of([] { llama4("max_seq_len = 0\n"); }).find("max_seq_len"), std::string::npos);
  // torchtune's llama4_transform takes no truncation_type.
  EXPECT_NE(error_of([] { llama4("truncation_type = \"left\"\n"); }).find("truncation_type"), std::string::npos);
  const auto json_path = fttest::write_temp("llama4_tokenizer.json", R"({"added_tokens": []})");
  const auto as_path = error_of([&] { fttest::make_tokenizer(kComponent, "path = " + quoted(json_path) + "\n"); });
  EXPECT_NE(as_path.find("special_tokens_path"), std::string::npos) << as_path;
}

// special_tokens_path: a tokenizer.json's added_tokens replace Meta's table, as in torchtune.
TEST(Llama4Tokenizer, SpecialTokensFromATokenizerJson) {
  const auto table = published::meta("llama4").at("special_tokens");
  nlohmann::json added = nlohmann::json::array();
  for (const auto& [name, id] : table.items())
    if (name != "<|eom|>" && name != "<|eot|>") added.push_back({{"content", name}, {"id", id}});
  // The file's ids win: <|eot|> and <|eom|> trade places.
  added.push_back({{"content", "<|eot|>"}, {"id", table.at("<|eom|>")}});
  added.push_back({{"content", "<|eom|>"}, {"id", table.at("<|eot|>")}});
  const auto swapped = fttest::write_temp("llama4_swapped.json", nlohmann::json{{"added_tokens", added}}.dump());
  auto tok = llama4("special_tokens_path = " + quoted(swapped) + "\n");
  EXPECT_EQ(tok->special_token("<|eot|>"), table.at("<|eom|>").get<std::int64_t>());
  const auto out = tok->tokenize_messages({{"user", "hi", true}, {"assistant", "hello"}}, true);
  ASSERT_GE(out.tokens.size(), 2u);
  EXPECT_EQ(out.tokens[out.tokens.size() - 2], table.at("<|eom|>").get<std::int64_t>()) << "the file's <|eot|>";

  nlohmann::json without_eot = nlohmann::json::array();
  for (const auto& [name, id] : table.items())
    if (name != "<|eot|>") without_eot.push_back({{"content", name}, {"id", id}});
  const auto missing = fttest::write_temp("llama4_no_eot.json", nlohmann::json{{"added_tokens", without_eot}}.dump());
  const auto error = error_of([&] { llama4("special_tokens_path = " + quoted(missing) + "\n"); });
  EXPECT_NE(error.find("llama4_no_eot.json"), std::string::npos) << error;
  EXPECT_NE(error.find("<|eot|>"), std::string::npos) << error;
}

}  // namespace
