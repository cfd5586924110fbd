// Tokenizers against independent sources: Hugging Face's own ids for real Llama 3, Qwen 3 and
// Llama 2 tokenizer.json files ($FT_FIXTURES/tokenizers/*/expected_ids.jsonl), and the ids in
// torchtune's own tests for its small test tokenizers ($FT_FIXTURES/torchtune_assets).
#include "text_data_support.h"

#include <fstream>

namespace {

using fttest::make_tokenizer;
using fttest::quoted;

struct Family {
  std::string dir, component;
};
std::ostream& operator<<(std::ostream& os, const Family& f) { return os << f.dir; }

class HuggingFaceExactness : public ::testing::TestWithParam<Family> {};

TEST_P(HuggingFaceExactness, EveryFixtureLineAndRoundTrip) {
  const auto& f = GetParam();
  auto tok =
      make_tokenizer(f.component, "path = " + quoted(fttest::tokenizers_dir() + "/" + f.dir + "/tokenizer.json") +
                                      "\nprompt_template = \"\"\n");
  std::ifstream in(fttest::tokenizers_dir() + "/" + f.dir + "/expected_ids.jsonl");
  ASSERT_TRUE(in) << "fixtures missing";
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const auto text = j.at("text").get<std::string>();
    const auto ids = j.at("ids").get<std::vector<std::int64_t>>();
    EXPECT_EQ(tok->encode(text, false, false), ids) << "text: " << quoted(text);
    EXPECT_EQ(tok->decode(ids), text);
    ++lines;
  }
  EXPECT_EQ(lines, 93);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HuggingFaceExactness,
                         ::testing::Values(Family{"llama3", "torchtune.models.llama3.llama3_tokenizer"},
                                           Family{"qwen3", "torchtune.models.qwen2_5.qwen2_5_tokenizer"},
                                           Family{"llama2", "torchtune.models.llama2.llama2_tokenizer"}),
                         [](const auto& param_info) { return param_info.param.dir; });

TEST(Tokenizers, Llama3SpecialTokens) {
  auto tok = fttest::llama3_json_tokenizer();
  EXPECT_EQ(tok->vocab_size(), 128256);
  EXPECT_EQ(tok->bos_id(), 128000);
  EXPECT_EQ(tok->eos_id(), 128001);
  EXPECT_EQ(tok->pad_id(), 128004);
  EXPECT_EQ(tok->special_token("<|start_header_id|>"), 128006);
  EXPECT_EQ(tok->special_token("<|end_header_id|>"), 128007);
  EXPECT_EQ(tok->special_token("<|eot_id|>"), 128009);
  EXPECT_FALSE(tok->special_token("<|no_such_token|>"));
  const auto hello = tok->encode("Hello", false, false);
  EXPECT_EQ(tok->encode("Hello", true, true), fttest::concat({{128000}, hello, {128001}}));
  // tokenizer.json's added tokens are recognised inside text, as Hugging Face does.
  EXPECT_EQ(tok->encode("Hello<|eot_id|>", false, false), fttest::concat({hello, {128009}}));
}

TEST(Tokenizers, QwenAndLlama2SpecialTokens) {
  auto qwen = make_tokenizer("torchtune.models.qwen2_5.qwen2_5_tokenizer",
                             "path = " + quoted(fttest::tokenizers_dir() + "/qwen3/tokenizer.json"));
  EXPECT_EQ(qwen->vocab_size(), 151669);
  EXPECT_EQ(qwen->eos_id(), 151645);  // <|im_end|>
  EXPECT_EQ(qwen->pad_id(), 151643);  // <|endoftext|>
  EXPECT_EQ(qwen->special_token("<|im_start|>"), 151644);
  EXPECT_EQ(qwen->encode("a", true, false), qwen->encode("a", false, false));  // Qwen has no BOS
  auto llama2 = make_tokenizer("torchtune.models.llama2.llama2_tokenizer",
                               "path = " + quoted(fttest::tokenizers_dir() + "/llama2/tokenizer.json"));
  EXPECT_EQ(llama2->vocab_size(), 32000);
  EXPECT_EQ(llama2->bos_id(), 1);
  EXPECT_EQ(llama2->eos_id(), 2);
  EXPECT_EQ(llama2->pad_id(), 0);
}

// torchtune's tests/torchtune/models/llama3/test_llama3_tokenizer.py on tiktoken_small.model.
const std::vector<std::int64_t> kSunIds = {73,  503, 654, 262, 376, 110, 46,  690, 720, 428, 270, 1119, 654,
                                           262, 376, 110, 44,  270, 686, 334, 312, 522, 511, 115, 46};
const std::string kSunText = "I can see the sun. But even if I cannot see the sun, I know that it exists.";

TEST(TorchtuneAssets, TiktokenLlama3Tokenizer) {
  auto tok =
      make_tokenizer("torchtune.models.llama3.llama3_tokenizer",
                     "path = " + quoted(fttest::assets_dir() + "/tiktoken_small.model") + "\nmax_seq_len = 2048\n");
  EXPECT_EQ(tok->vocab_size(), 128257);
  EXPECT_EQ(tok->encode(kSunText, false, false), kSunIds);
  EXPECT_EQ(tok->decode(kSunIds), kSunText);

  std::vector<ft::Message> messages{
      {"user", "I can see the sun. " + std::string("But even if I cannot see the sun, I know that it exists."), true},
      {"assistant", "And to know that the sun is there - that is living.", false}};
  const std::vector<std::int64_t> user = {128000, 128006, 477, 273, 128007, 10,  10,  73,   503, 654, 262,
                                          376,    110,    46,  690, 720,    428, 270, 1119, 654, 262, 376,
                                          110,    44,     270, 686, 334,    312, 522, 511,  115, 46,  128009};
  const std::vector<std::int64_t> assistant = {128006, 520, 511, 446,  128007, 10,     10,    65,  269,
                                               277,    686, 334, 262,  376,    110,    351,   443, 32,
                                               45,     334, 351, 1955, 46,     128009, 128001};
  const auto out = tok->tokenize_messages(messages, true);
  EXPECT_EQ(out.tokens, fttest::concat({user, assistant}));
  std::vector<bool> mask(user.size(), true);
  mask.insert(mask.end(), assistant.size() - 1, false);
  mask.push_back(true);
  EXPECT_EQ(out.mask, mask);
}

// torchtune's tests/torchtune/models/qwen2_5/test_tokenizer.py on tiny_bpe_{vocab.json,merges.txt}.
const std::vector<std::int64_t> kQwenChat = {151644, 82,     88,   479,    94,   56,     119, 230, 98,    374, 494,
                                             1318,   249,    13,   151645, 94,   151644, 273, 105, 94,    38,  229,
                                             362,    98,     1695, 310,    1305, 165,    128, 432, 43,    44,  82,
                                             13,     151645, 94,   151644, 397,  251,    249, 94,  151645};
const std::vector<ft::Message> kQwenMessages = {
    {"system", "You are a helpful assistant."}, {"user", "Give me a short introduction to LLMs."}, {"assistant", ""}};

TEST(TorchtuneAssets, QwenVocabMerges) {
  auto tok = make_tokenizer("torchtune.models.qwen2_5.qwen2_5_tokenizer",
                            "path = " + quoted(fttest::assets_dir() + "/tiny_bpe_vocab.json") +
                                "\nmerges_file = " + quoted(fttest::assets_dir() + "/tiny_bpe_merges.txt") + "\n");
  EXPECT_EQ(tok->tokenize_messages(kQwenMessages, true).tokens, kQwenChat);
  EXPECT_EQ(tok->decode(kQwenChat),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
            "Give me a short introduction to LLMs.<|im_end|>\n<|im_start|>assistant\n<|im_end|>");
}

TEST(TorchtuneAssets, QwenTokenizerJsonMatchesVocabMerges) {
  // The same tiny BPE as a tokenizer.json, whose special tokens sit at 2000.. instead of 151643..
  auto tok = make_tokenizer("torchtune.models.qwen2_5.qwen2_5_tokenizer",
                            "path = " + quoted(fttest::assets_dir() + "/tiny_bpe_tokenizer.json") + "\n");
  auto expected = kQwenChat;
  for (auto& id : expected)
    if (id >= 151643) id = id - 151643 + 2000;
  EXPECT_EQ(tok->tokenize_messages(kQwenMessages, true).tokens, expected);
}

// torchtune's tests/torchtune/models/llama2/test_llama2_tokenizer.py on m.model (no template).
TEST(TorchtuneAssets, SentencePieceLlama2Tokenizer) {
  auto tok = make_tokenizer("torchtune.models.llama2.llama2_tokenizer",
                            "path = " + quoted(fttest::assets_dir() + "/m.model") + "\nprompt_template = \"\"\n");
  const std::vector<std::int64_t> expected = {
      1,    323, 418,  202,  31,  128,  15,  120,  47,   88,   584,  23,   1665, 182, 9,   434,  295, 85,  4,   780,
      47,   636, 9,    1094, 213, 23,   9,   69,   69,   164,  1153, 299,  35,   961, 132, 237,  7,   5,   761, 4,
      12,   0,   313,  120,  47,  88,   584, 166,  493,  171,  54,   299,  9,    906, 244, 19,   186, 767, 303, 671,
      92,   209, 24,   190,  52,  38,   4,   12,   0,    1243, 7,    69,   135,  213, 166, 6,    21,  45,  128, 71,
      58,   38,  14,   10,   652, 35,   462, 101,  1306, 7,    341,  171,  20,   14,  127, 26,   652, 7,   10,  1268,
      4,    6,   21,   45,   591, 9,    566, 22,   994,  913,  38,   20,   52,   24,  10,  1306, 734, 14,  71,  365,
      1382, 7,   10,   801,  105, 88,   244, 985,  7,    4,    6,    21,   45,   9,   566, 126,  180, 11,  5,   1137,
      7,    10,  1089, 151,  8,   1156, 213, 342,  7,    10,   384,  104,  54,   470, 4,   6,    21,  45,  287, 14,
      33,   125, 135,  24,   101, 512,  66,  7,    28,   822,  15,   542,  69,   59,  110, 14,   365, 229, 7,   3,
      36,   267, 36,   125,  135, 24,   101, 1503, 182,  9,    222,  1661, 191,  332, 92,  92,   24,  24,  4,   2};
  std::vector<ft::Message> messages{
      {"user",
       "Below is an instruction that describes a task. Write a response that appropriately completes the request.\n\n"
       "### Instruction:\nGenerate a realistic dating profile bio.\n\n### Response:\n",
       true},
      {"assistant",
       "I'm an outgoing and friendly person who loves spending time with friends and family. I'm also a big-time "
       "foodie and love trying out new restaurants and different cuisines. I'm a big fan of the arts and enjoy going "
       "to museums and galleries. I'm looking for someone who shares my interest in exploring new places, as well as "
       "someone who appreciates a good conversation over coffee."}};
  const auto out = tok->tokenize_messages(messages, true);
  EXPECT_EQ(out.tokens, expected);
  std::vector<bool> mask(75, true);
  mask.insert(mask.end(), 125, false);
  EXPECT_EQ(out.mask, mask);
}

TEST(Tokenizers, MaxSeqLenTruncatesConversationsKeepingEos) {
  auto tok = fttest::llama3_json_tokenizer("max_seq_len = 8\n");
  const auto out = tok->tokenize_messages(
      {{"user", "one two three four five six seven eight nine", true}, {"assistant", "ten"}}, true);
  ASSERT_EQ(out.tokens.size(), 8u);
  EXPECT_EQ(out.tokens.back(), 128001);
  EXPECT_EQ(out.mask.size(), 8u);
  EXPECT_TRUE(out.mask.back());
}

TEST(Tokenizers, ErrorsNameTheFileAndKey) {
  auto missing = fttest::error_of(
      [] { make_tokenizer("torchtune.models.llama3.llama3_tokenizer", "path = \"/nonexistent/tokenizer.json\"\n"); });
  EXPECT_NE(missing.find("/nonexistent/tokenizer.json"), std::string::npos) << missing;
  auto no_merges = fttest::error_of([] {
    make_tokenizer("torchtune.models.qwen2_5.qwen2_5_tokenizer",
                   "path = " + quoted(fttest::assets_dir() + "/tiny_bpe_vocab.json"));
  });
  EXPECT_NE(no_merges.find("merges_file"), std::string::npos) << no_merges;
  auto bad_trunc = fttest::error_of([] { fttest::llama3_json_tokenizer("truncation_type = \"middle\"\n"); });
  EXPECT_NE(bad_trunc.find("tokenizer.truncation_type"), std::string::npos) << bad_trunc;
}

}  // namespace
