// torchtune.models.qwen2.qwen2_tokenizer against independent sources: the ids in torchtune's own
// tests/torchtune/models/qwen2/test_qwen2_tokenizer.py (tiny BPE assets), and Hugging Face's ids
// for a real Qwen vocabulary (the Qwen 3 fixture's tokenizer.json, whose byte-level BPE and first
// special tokens Qwen 2 shares) written out as the vocab.json + merges.txt pair torchtune reads.
// Qwen 2 knows only three special tokens; Qwen 2.5's others are plain text to it.
#include "text_data_support.h"

#include <algorithm>
#include <fstream>

namespace {

using fttest::make_tokenizer;
using fttest::quoted;

// torchtune's test conversation and its expected ids (special ids 2000.. from tiny_bpe_tokenizer.json).
const std::vector<ft::Message> kMessages = {
    {"user",
     "Below is an instruction that describes a task. Write a response that appropriately completes the request.\n\n"
     "### Instruction:\nGenerate a realistic dating profile bio.\n\n### Response:\n",
     true},
    {"assistant",
     "I'm an outgoing and friendly person who loves spending time with friends and family. I'm also a big-time "
     "foodie and love trying out new restaurants and different cuisines. I'm a big fan of the arts and enjoy going "
     "to museums and galleries. I'm looking for someone who shares my interest in exploring new places, as well as "
     "someone who appreciates a good conversation over coffee."}};

const std::vector<std::int64_t> kExpectedWithoutEos = {
    2001, 273, 105, 94,   33,   214,  174,  156,  194,  130,  197,  184,  446, 789,  113,  98,   1914, 13,   346,
    788,  98,  706, 102,  182,  184,  1916, 176,  762,  83,   113,  103,  874, 269,  13,   94,   94,   2,    2,
    2,    483, 197, 25,   94,   885,  98,   1226, 1960, 348,  114,  1123, 399, 1583, 78,   13,   94,   94,   2,
    2,    2,   360, 1733, 102,  182,  25,   94,   2002, 94,   2001, 397,  251, 249,  94,   40,   1791, 194,  453,
    70,   78,  114, 120,  967,  176,  618,  628,  1275, 794,  294,  1095, 445, 212,  1356, 120,  1299, 13,   223,
    1791, 451, 98,  127,  181,  1047, 375,  915,  380,  120,  1448, 1732, 114, 453,  447,  1219, 64,   187,  921,
    120,  742, 107, 84,   122,  893,  13,   223,  1791, 98,   127,  181,  123, 124,  131,  103,  744,  82,   120,
    1506, 416, 114, 128,  1429, 182,  253,  82,   120,  163,  330,  105,  262, 13,   223,  1791, 155,  1551, 171,
    1951, 628, 296, 64,   237,  886,  1390, 130,  883,  1678, 447,  306,  279, 113,  11,   215,  785,  215,  1951,
    628,  378, 101, 66,   72,   593,  98,   984,  208,  1580, 167,  510,  737, 318,  1278, 13};

std::shared_ptr<ft::Tokenizer> tiny_qwen2(const std::string& extra = "") {
  const auto assets = fttest::assets_dir();
  return make_tokenizer("torchtune.models.qwen2.qwen2_tokenizer",
                        "path = " + quoted(assets + "/tiny_bpe_vocab.json") +
                            "\nmerges_file = " + quoted(assets + "/tiny_bpe_merges.txt") +
                            "\nspecial_tokens_path = " + quoted(assets + "/tiny_bpe_tokenizer.json") + "\n" + extra);
}

TEST(Qwen2Tokenizer, TorchtuneTestConversation) {
  auto tok = tiny_qwen2();
  const auto out = tok->tokenize_messages(kMessages, true);
  EXPECT_EQ(out.tokens, fttest::concat({kExpectedWithoutEos, {2002}}));  // + EOS = <|im_end|>
  std::vector<bool> mask(67, true);
  mask.insert(mask.end(), 121, false);
  EXPECT_EQ(out.mask, mask);
  EXPECT_EQ(tok->decode(out.tokens), "<|im_start|>user\n" + kMessages[0].content + "<|im_end|>\n" +
                                         "<|im_start|>assistant\n" + kMessages[1].content + "<|im_end|>");

  const auto no_eos = tok->tokenize_messages(kMessages, false);
  EXPECT_EQ(no_eos.tokens, kExpectedWithoutEos);
  EXPECT_EQ(no_eos.mask.size(), 187u);
  EXPECT_EQ(std::count(no_eos.mask.begin(), no_eos.mask.end(), true), 67);

  const auto truncated = tiny_qwen2("max_seq_len = 10\n")->tokenize_messages(kMessages, true);
  EXPECT_EQ(truncated.tokens.size(), 10u);
  EXPECT_EQ(truncated.mask.size(), 10u);
  EXPECT_EQ(truncated.tokens.back(), 2002);
}

// Unlike Qwen 2.5's, Qwen 2's ipython (tool result) messages are rendered bare, with no header.
TEST(Qwen2Tokenizer, IpythonMessagesHaveNoChatMlWrapping) {
  auto tok = tiny_qwen2();
  const std::vector<ft::Message> messages = {{"user", "Hi", true}, {"ipython", "42", true}, {"assistant", "Ok"}};
  const auto out = tok->tokenize_messages(messages, true);
  EXPECT_EQ(tok->decode(out.tokens), "<|im_start|>user\nHi<|im_end|>\n42<|im_start|>assistant\nOk<|im_end|>");
}

struct QwenVocabFiles {
  std::string vocab_json, merges_txt;
  nlohmann::json added_tokens;
};

// The Qwen 3 fixture's BPE model as vocab.json + merges.txt, and its added_tokens.
const QwenVocabFiles& qwen_vocab_files() {
  static const QwenVocabFiles files = [] {
    const auto json = fttest::read_json_file(fttest::tokenizers_dir() + "/qwen3/tokenizer.json");
    QwenVocabFiles f;
    f.vocab_json = fttest::write_temp("vocab.json", json.at("model").at("vocab").dump());
    std::string merges = "#version: 0.2\n";
    for (const auto& m : json.at("model").at("merges")) {
      merges += m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>();
      merges += "\n";
    }
    f.merges_txt = fttest::write_temp("merges.txt", merges);
    f.added_tokens = json.at("added_tokens");
    return f;
  }();
  return files;
}

std::int64_t added_token_id(const std::string& content) {
  for (const auto& t : qwen_vocab_files().added_tokens)
    if (t.at("content") == content) return t.at("id").get<std::int64_t>();
  throw std::runtime_error("fixture tokenizer.json has no added token " + content);
}

std::shared_ptr<ft::Tokenizer> real_vocab(const std::string& component) {
  const auto& f = qwen_vocab_files();
  return make_tokenizer(component, "path = " + quoted(f.vocab_json) + "\nmerges_file = " + quoted(f.merges_txt));
}

TEST(Qwen2Tokenizer, RealVocabularyMatchesHuggingFaceIds) {
  auto tok = real_vocab("torchtune.models.qwen2.qwen2_tokenizer");
  std::ifstream in(fttest::tokenizers_dir() + "/qwen3/expected_ids.jsonl");
  ASSERT_TRUE(in) << "fixtures missing";
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    const auto j = nlohmann::json::parse(line);
    const auto text = j.at("text").get<std::string>();
    const auto ids = j.at("ids").get<std::vector<std::int64_t>>();
    EXPECT_EQ(tok->encode(text, false, false), ids) << "text: " << quoted(text);
    EXPECT_EQ(tok->decode(ids), text);
  }
  EXPECT_EQ(lines, 93);
}

TEST(Qwen2Tokenizer, OnlyQwen2sThreeSpecialTokens) {
  auto qwen2 = real_vocab("torchtune.models.qwen2.qwen2_tokenizer");
  auto qwen2_5 = real_vocab("torchtune.models.qwen2_5.qwen2_5_tokenizer");
  const std::int64_t endoftext = added_token_id("<|endoftext|>"), im_start = added_token_id("<|im_start|>"),
                     im_end = added_token_id("<|im_end|>"), box_start = added_token_id("<|box_start|>");
  EXPECT_EQ(qwen2->vocab_size(), endoftext + 3);
  EXPECT_EQ(qwen2->eos_id(), im_end);
  EXPECT_EQ(qwen2->pad_id(), endoftext);
  EXPECT_EQ(qwen2->bos_id(), -1);
  EXPECT_EQ(qwen2->encode("<|im_start|>", false, false), std::vector<std::int64_t>{im_start});
  EXPECT_FALSE(qwen2->special_token("<|box_start|>"));
  // Qwen 2.5's <|box_start|> is one special token there, ordinary text to Qwen 2.
  EXPECT_EQ(qwen2_5->encode("<|box_start|>", false, false), std::vector<std::int64_t>{box_start});
  const auto plain = qwen2->encode("<|box_start|>", false, false);
  EXPECT_GT(plain.size(), 1u);
  for (auto id : plain) EXPECT_LT(id, endoftext);
  EXPECT_EQ(qwen2->decode(plain), "<|box_start|>");
  EXPECT_EQ(qwen2->encode("x", false, true).back(), im_end);
}

// One ChatML rendering serves both families; they differ in tool use. Qwen 2.5 renders it as its
// Hugging Face chat template does (a run of tool results is one user turn of <tool_response>
// blocks, a tool call sits in <tool_call> tokens), Qwen 2 leaves both bare, as torchtune's
// Qwen2Tokenizer does. Qwen 2.5 stops at <|im_end|> and <|endoftext|>, the eos_token_id pair of
// Qwen 2.5's generation_config.json.
TEST(Qwen2Tokenizer, ToolUseIsTaggedOnlyByQwen2_5) {
  auto qwen2 = real_vocab("torchtune.models.qwen2.qwen2_tokenizer");
  auto qwen2_5 = real_vocab("torchtune.models.qwen2_5.qwen2_5_tokenizer");
  ft::Message call{"assistant", "{\"name\": \"add\"}"};
  call.ipython = true;
  const std::vector<ft::Message> messages = {
      {"user", "What is 2+2?"}, call, {"ipython", "4"}, {"ipython", "ok"}, {"assistant", "It is 4."}};

  const auto tagged = qwen2_5->tokenize_messages(messages, true).tokens;
  EXPECT_EQ(qwen2_5->decode(tagged),
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"add\"}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n4\n</tool_response>\n<tool_response>\nok\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\nIt is 4.<|im_end|>");
  const std::int64_t tool_call = added_token_id("<tool_call>"), end_tool_call = added_token_id("</tool_call>");
  EXPECT_EQ(std::count(tagged.begin(), tagged.end(), tool_call), 1) << "<tool_call> is one special token";
  EXPECT_EQ(std::count(tagged.begin(), tagged.end(), end_tool_call), 1);

  const auto bare = qwen2->tokenize_messages(messages, true).tokens;
  EXPECT_EQ(qwen2->decode(bare),
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n{\"name\": \"add\"}<|im_end|>\n"
            "4ok<|im_start|>assistant\nIt is 4.<|im_end|>");

  const std::int64_t endoftext = added_token_id("<|endoftext|>"), im_end = added_token_id("<|im_end|>");
  // torchtune's Qwen2Tokenizer: stop_tokens = [eos_id, im_end_id], for Qwen 2 and Qwen 2.5 alike.
  EXPECT_EQ(qwen2_5->stop_tokens(), (std::vector<std::int64_t>{im_end, endoftext}));
  EXPECT_EQ(qwen2->stop_tokens(), (std::vector<std::int64_t>{im_end, endoftext}));
}

}  // namespace
