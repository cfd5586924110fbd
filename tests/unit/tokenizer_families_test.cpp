// What each new tokenizer family does beyond matching its references (published_tokenizers_test):
// the keys torchtune's builders take, each working or refused by name; the special tokens; where
// fthost and torchtune part (Phi-3's vocabulary size, Qwen 3's truncation_type), and the prompt
// templates of the SentencePiece families.
#include "published_tokenizers.h"

#include <ft/registry.h>

#include <algorithm>
#include <set>

namespace {

using fttest::quoted;
namespace published = fttest::published;

std::set<std::string> schema_keys(const std::string& component) {
  const auto* info = fttest::builtin_registry().find(component);
  if (!info) throw std::runtime_error(component + " is not registered");
  std::set<std::string> keys;
  for (const auto& k : info->schema.keys()) keys.insert(k.name);
  return keys;
}

// The keys of torchtune's builders (main branch: 0.6.1's plus truncation_type). Keys fthost does
// not render (a custom prompt_template where the family's format is built in) are accepted by the
// schema and refused by name when set; the Qwen builders' **kwargs (errors, bpe_cache_size, ...)
// are unknown keys, refused by name too.
TEST(TokenizerFamilies, SchemasHoldTorchtunesKeys) {
  EXPECT_EQ(schema_keys("torchtune.models.gemma.gemma_tokenizer"),
            (std::set<std::string>{"path", "max_seq_len", "prompt_template", "truncation_type"}));
  EXPECT_EQ(schema_keys("torchtune.models.mistral.mistral_tokenizer"),
            (std::set<std::string>{"path", "max_seq_len", "prompt_template", "truncation_type"}));
  EXPECT_EQ(
      schema_keys("torchtune.models.phi3.phi3_mini_tokenizer"),
      (std::set<std::string>{"path", "special_tokens_path", "max_seq_len", "prompt_template", "truncation_type"}));
  EXPECT_EQ(schema_keys("torchtune.models.phi4.phi4_tokenizer"),
            (std::set<std::string>{"vocab_path", "merges_path", "special_tokens_path", "max_seq_len", "prompt_template",
                                   "truncation_type"}));
  EXPECT_EQ(schema_keys("torchtune.models.qwen3.qwen3_tokenizer"),
            (std::set<std::string>{"path", "merges_file", "special_tokens_path", "max_seq_len", "prompt_template",
                                   "truncation_type"}));
}

TEST(TokenizerFamilies, KeysFthostDoesNotRenderAreRefusedByName) {
  for (const auto& [component, keys] : std::vector<std::pair<std::string, std::string>>{
           {"torchtune.models.phi3.phi3_mini_tokenizer",
            "path = " + quoted(published::file("phi3_mini", "tokenizer.model"))},
           {"torchtune.models.phi4.phi4_tokenizer",
            "vocab_path = " + quoted(published::file("phi4", "vocab.json")) +
                "\nmerges_path = " + quoted(published::file("phi4", "merges.txt"))},
           {"torchtune.models.qwen3.qwen3_tokenizer",
            "path = " + quoted(fttest::tokenizers_dir() + "/qwen3/tokenizer.json")}}) {
    const auto custom = fttest::error_of([&, c = component, k = keys] {
      fttest::make_tokenizer(c, k + "\nprompt_template = \"torchtune.data.ChatMLTemplate\"\n");
    });
    EXPECT_NE(custom.find("tokenizer.prompt_template"), std::string::npos) << component << ": " << custom;
  }
  const auto kwarg = fttest::error_of([] { published::qwen3_tokenizer_json("bpe_cache_size = 1000\n"); });
  EXPECT_NE(kwarg.find("bpe_cache_size"), std::string::npos) << kwarg;
  const auto no_vocab = fttest::error_of([] {
    fttest::make_tokenizer("torchtune.models.phi4.phi4_tokenizer",
                           "merges_path = " + quoted(published::file("phi4", "merges.txt")) + "\n");
  });
  EXPECT_NE(no_vocab.find("vocab_path"), std::string::npos) << no_vocab;
  const auto template_value = fttest::error_of([] { published::gemma("prompt_template = \"Llama2ChatTemplate\"\n"); });
  EXPECT_NE(template_value.find("tokenizer.prompt_template"), std::string::npos) << template_value;
  EXPECT_NE(template_value.find("torchtune.models.mistral.MistralChatTemplate"), std::string::npos) << template_value;
}

// MistralChatTemplate has no system message (torchtune raises); without a template the system
// message is text like any other.
TEST(TokenizerFamilies, MistralTemplateRefusesSystemMessages) {
  const std::vector<ft::Message> chat = {{"system", "Be brief.", true}, {"user", "Hi", true}, {"assistant", "Hello"}};
  const auto refused = fttest::error_of([&] { published::mistral()->tokenize_messages(chat, true); });
  EXPECT_NE(refused.find("MistralChatTemplate"), std::string::npos) << refused;
  EXPECT_NE(refused.find("prompt_template"), std::string::npos) << refused;
  auto plain = published::mistral("prompt_template = \"\"\n");
  const auto out = plain->tokenize_messages(chat, true);
  EXPECT_EQ(out.tokens.front(), 1);  // <s>
  EXPECT_EQ(out.tokens.back(), 2);   // </s>
  // Messages after the first of a turn are encoded without a leading word boundary.
  EXPECT_EQ(plain->decode(out.tokens), "Be brief.HiHello");
}

TEST(TokenizerFamilies, GemmaSpecialTokens) {
  auto tok = published::gemma();
  EXPECT_EQ(tok->vocab_size(), 256000);
  EXPECT_EQ(tok->bos_id(), 2);  // <bos>
  EXPECT_EQ(tok->eos_id(), 1);  // <eos>
  EXPECT_EQ(tok->pad_id(), 0);  // <pad>
  EXPECT_EQ(tok->special_token("<start_of_turn>"), 106);
  EXPECT_EQ(tok->stop_tokens(), std::vector<std::int64_t>{1});
}

// The SentencePiece families take a tokenizer.json too. Their chat renderings on the shared
// $FT_FIXTURES/tokenizers/llama2/tokenizer.json (whose vocabulary is Mistral 7B's: docs/data.md),
// which the sanitizer suite runs (it cannot load a SentencePiece model:
// tests/sanitizers/excluded_tests.txt).
TEST(TokenizerFamilies, ChatFormatsOverATokenizerJson) {
  const auto path = "path = " + quoted(fttest::tokenizers_dir() + "/llama2/tokenizer.json") + "\n";
  const std::vector<ft::Message> chat = {{"user", "Hi", true}, {"assistant", "Hello"}};
  auto mistral = fttest::make_tokenizer("torchtune.models.mistral.mistral_tokenizer", path);
  const auto m = mistral->tokenize_messages(chat, true);
  ASSERT_EQ(m.tokens.size(), m.mask.size());
  EXPECT_EQ(m.tokens.front(), 1);
  EXPECT_EQ(m.tokens.back(), 2);
  // torchtune's ids on Mistral's tokenizer.model, which this tokenizer.json's vocabulary is, and
  // Hugging Face's decoding of them.
  EXPECT_EQ(m.tokens,
            (std::vector<std::int64_t>{1, 733, 16289, 28793, 15359, 28705, 733, 28748, 16289, 28793, 22557, 2}));
  EXPECT_EQ(mistral->decode(m.tokens), "<s> [INST] Hi  [/INST] Hello</s>");
  EXPECT_TRUE(m.mask.front());  // BOS, with the user's message
  EXPECT_FALSE(m.mask.back());  // EOS, with the assistant's
  auto phi3 = fttest::make_tokenizer("torchtune.models.phi3.phi3_mini_tokenizer", path);
  const auto p = phi3->tokenize_messages(chat, true);
  ASSERT_EQ(p.tokens.size(), p.mask.size());
  EXPECT_EQ(p.tokens[1], 32010);
  EXPECT_EQ(p.tokens.back(), 32000);
  EXPECT_EQ(std::count(p.tokens.begin(), p.tokens.end(), 32007), 2);
}

// Phi-3's special tokens sit above its SentencePiece vocabulary, which torchtune reports as the
// vocabulary size (32000); fthost's covers every id the tokenizer emits, so the recipe's check
// against the model's embedding (32064) holds. SentencePiece never sees them: in text they are
// ordinary characters, and decoding leaves them out as torchtune's decode does.
TEST(TokenizerFamilies, Phi3SpecialTokensAboveTheSentencePieceVocabulary) {
  auto tok = published::phi3_mini();
  EXPECT_EQ(published::meta("phi3_mini").at("vocab_size"), 32000);
  EXPECT_EQ(tok->vocab_size(), 32011);
  EXPECT_EQ(tok->special_token("<|user|>"), 32010);
  EXPECT_EQ(tok->special_token("<|end|>"), 32007);
  EXPECT_EQ(tok->special_token("<s>"), 1);
  const auto text = tok->encode("<|user|>", false, false);
  EXPECT_GT(text.size(), 1u);
  for (auto id : text) EXPECT_LT(id, 32000);
  const auto chat = tok->tokenize_messages({{"user", "Hi", true}, {"assistant", "Hello"}}, true);
  EXPECT_EQ(std::count(chat.tokens.begin(), chat.tokens.end(), 32010), 1);
  EXPECT_EQ(chat.tokens.back(), 32000);                       // <|endoftext|>
  EXPECT_EQ(tok->decode(chat.tokens), "\nHi \n \nHello \n");  // as torchtune's decode
  const auto refused = fttest::error_of([&] { tok->tokenize_messages({{"ipython", "42"}}, true); });
  EXPECT_NE(refused.find("\"ipython\""), std::string::npos) << refused;
}

// special_tokens_path replaces the table (torchtune's parse_hf_tokenizer_json); one without a token
// the chat format needs is refused naming the file and the token.
TEST(TokenizerFamilies, Phi3SpecialTokensFromTokenizerJson) {
  nlohmann::json added = nlohmann::json::array();
  const std::vector<std::pair<std::string, int>> tokens = {{"<|endoftext|>", 32100},
                                                           {"<|assistant|>", 32101},
                                                           {"<|system|>", 32106},
                                                           {"<|end|>", 32107},
                                                           {"<|user|>", 32110}};
  for (const auto& [content, id] : tokens) added.push_back({{"content", content}, {"id", id}});
  const auto path = fttest::write_temp("tokenizer.json", nlohmann::json{{"added_tokens", added}}.dump());
  auto tok = published::phi3_mini("special_tokens_path = " + quoted(path) + "\n");
  const auto chat = tok->tokenize_messages({{"user", "Hi", true}, {"assistant", "Hello"}}, true);
  EXPECT_EQ(chat.tokens[1], 32110);
  EXPECT_EQ(chat.tokens.back(), 32100);
  EXPECT_EQ(tok->eos_id(), 32100);

  added.erase(added.begin() + 3);  // <|end|>
  const auto partial = fttest::write_temp("tokenizer.json", nlohmann::json{{"added_tokens", added}}.dump());
  const auto error = fttest::error_of([&] { published::phi3_mini("special_tokens_path = " + quoted(partial) + "\n"); });
  EXPECT_NE(error.find(partial), std::string::npos) << error;
  EXPECT_NE(error.find("<|end|>"), std::string::npos) << error;
}

// Phi-4's special tokens are split out of text as its published tokenizer does, and left out by
// decode as torchtune's decode does.
TEST(TokenizerFamilies, Phi4SpecialTokens) {
  auto tok = published::phi4();
  EXPECT_EQ(tok->vocab_size(), 100352);
  EXPECT_EQ(tok->special_token("<|im_sep|>"), 100266);
  EXPECT_EQ(tok->special_token("<|endofprompt|>"), 100276);
  EXPECT_EQ(tok->special_token("<|dummy_85|>"), 100349);
  const auto ids = tok->encode("<|im_start|>user<|im_sep|>hi<|im_end|>", false, false);
  EXPECT_EQ(ids.front(), 100264);
  EXPECT_EQ(ids.back(), 100265);
  EXPECT_EQ(tok->decode(ids), "userhi");
  // Phi-4's chat format has no newlines; an assistant message ends with <|im_end|> only with end tokens.
  const std::vector<ft::Message> chat = {{"user", "Hi", true}, {"assistant", "Hello"}};
  EXPECT_EQ(tok->tokenize_messages(chat, true).tokens.back(), 100265);
  EXPECT_NE(tok->tokenize_messages(chat, false).tokens.back(), 100265);
}

// <think> and </think> are single tokens to Qwen 3 and ordinary text to Qwen 2.5.
TEST(TokenizerFamilies, Qwen3ThinkTokens) {
  auto qwen3 = published::qwen3_tokenizer_json();
  auto qwen2_5 = fttest::make_tokenizer("torchtune.models.qwen2_5.qwen2_5_tokenizer",
                                        "path = " + quoted(published::file("qwen3", "vocab.json")) +
                                            "\nmerges_file = " + quoted(published::file("qwen3", "merges.txt")) + "\n");
  EXPECT_EQ(qwen3->vocab_size(), 151669);
  EXPECT_EQ(qwen3->encode("<think>", false, false), std::vector<std::int64_t>{151667});
  EXPECT_EQ(qwen3->encode("</think>", false, false), std::vector<std::int64_t>{151668});
  EXPECT_EQ(qwen3->special_token("<tool_response>"), 151665);
  EXPECT_GT(qwen2_5->encode("<think>", false, false).size(), 1u);
}

// truncation_type = "left" keeps a conversation's end (torchtune main's truncate); torchtune's
// own Qwen3Tokenizer takes the key but keeps the start whatever it says. As for "right", messages
// stop being rendered once max_seq_len is reached, so this is the end of what was rendered.
TEST(TokenizerFamilies, Qwen3LeftTruncationKeepsTheEnd) {
  const std::vector<ft::Message> chat = {{"user", "Hi", true}, {"assistant", "It is sunny and warm in Paris today."}};
  const auto full = published::qwen3_tokenizer_json()->tokenize_messages(chat, true);
  const auto left =
      published::qwen3_tokenizer_json("max_seq_len = 12\ntruncation_type = \"left\"\n")->tokenize_messages(chat, true);
  ASSERT_GT(full.tokens.size(), 12u);
  EXPECT_EQ(left.tokens, std::vector<std::int64_t>(full.tokens.end() - 12, full.tokens.end()));
  EXPECT_EQ(left.tokens.back(), 151645);  // <|im_end|>
  EXPECT_TRUE(left.truncated);
}

}  // namespace
