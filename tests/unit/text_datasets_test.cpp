// The text datasets' token/label layouts, checked against torchtune's templates written out here
// by hand: the Alpaca prompt, Llama 3 headers, ChatML; prompts masked with -100 unless
// train_on_input, responses kept, end tokens appended. Also splits, packing and errors.
#include "text_data_support.h"

#include <ft/collate.h>

#include <numeric>

namespace {

using fttest::concat;
using fttest::quoted;
using Ids = std::vector<std::int64_t>;

constexpr std::int64_t kBos = 128000, kEos = 128001, kStartHeader = 128006, kEndHeader = 128007, kEot = 128009;

std::string alpaca_source() { return "source = " + quoted(fttest::data_dir() + "/alpaca_tiny.json") + "\n"; }

std::string strip(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n\r"), e = s.find_last_not_of(" \t\n\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// torchtune's Alpaca prompt (AlpacaToMessages), written out.
std::string alpaca_prompt(const nlohmann::json& r) {
  const std::string input = r.at("input").get<std::string>();
  if (input.empty())
    return "Below is an instruction that describes a task. Write a response that appropriately completes the "
           "request.\n\n"
           "### Instruction:\n" +
           r.at("instruction").get<std::string>() + "\n\n### Response:\n";
  return "Below is an instruction that describes a task, paired with an input that provides further context. "
         "Write a response that appropriately completes the request.\n\n### Instruction:\n" +
         r.at("instruction").get<std::string>() + "\n\n### Input:\n" + input + "\n\n### Response:\n";
}

// One Llama 3 turn: <|start_header_id|>role<|end_header_id|>\n\n content <|eot_id|>.
Ids llama3_turn(const ft::Tokenizer& tok, const std::string& role, const std::string& content) {
  return concat({{kStartHeader},
                 tok.encode(role, false, false),
                 {kEndHeader},
                 tok.encode("\n\n", false, false),
                 tok.encode(strip(content), false, false),
                 {kEot}});
}

Ids masked(const Ids& ids) { return Ids(ids.size(), ft::kIgnoreIndex); }

class AlpacaLayout : public ::testing::TestWithParam<int> {};

TEST_P(AlpacaLayout, Llama3PromptMaskedResponseKept) {
  const int index = GetParam();
  const auto records = fttest::read_json_file(fttest::data_dir() + "/alpaca_tiny.json");
  const auto& r = records.at(index);
  // The fixture's pre-rendered "text" column is the Alpaca prompt followed by the output.
  ASSERT_EQ(alpaca_prompt(r) + r.at("output").get<std::string>(), r.at("text").get<std::string>());

  auto tok = fttest::llama3_json_tokenizer();
  const Ids user = llama3_turn(*tok, "user", alpaca_prompt(r));
  const Ids assistant = llama3_turn(*tok, "assistant", r.at("output").get<std::string>());

  auto masked_ds =
      fttest::make_dataset("torchtune.datasets.alpaca_dataset", alpaca_source() + "train_on_input = false\n", tok);
  ASSERT_EQ(masked_ds->size(), 100u);
  const auto s = masked_ds->get(index);
  EXPECT_EQ(s.tokens, concat({{kBos}, user, assistant, {kEos}}));
  EXPECT_EQ(s.labels, concat({{ft::kIgnoreIndex}, masked(user), assistant, {ft::kIgnoreIndex}}));

  auto all_ds =
      fttest::make_dataset("torchtune.datasets.alpaca_dataset", alpaca_source(), tok);  // train_on_input = true
  const auto t = all_ds->get(index);
  EXPECT_EQ(t.tokens, s.tokens);
  EXPECT_EQ(t.labels, concat({{ft::kIgnoreIndex}, user, assistant, {ft::kIgnoreIndex}}));
}

// Record 0 has no input, the others chosen have one (both Alpaca prompts).
INSTANTIATE_TEST_SUITE_P(Records, AlpacaLayout, ::testing::Values(0, 5, 7, 42));

TEST(TextDatasets, AlpacaRecordsWithAndWithoutInputAreBothCovered) {
  const auto records = fttest::read_json_file(fttest::data_dir() + "/alpaca_tiny.json");
  bool with = false, without = false;
  for (int i : {0, 5, 7, 42}) (records.at(i).at("input").get<std::string>().empty() ? without : with) = true;
  EXPECT_TRUE(with && without);
}

TEST(TextDatasets, ShareGptChatInChatML) {
  auto tok = fttest::make_tokenizer("torchtune.models.qwen2_5.qwen2_5_tokenizer",
                                    "path = " + quoted(fttest::tokenizers_dir() + "/qwen3/tokenizer.json"));
  auto ds = fttest::make_dataset("torchtune.datasets.chat_dataset",
                                 "source = " + quoted(fttest::data_dir() + "/chat_tiny.json") +
                                     "\nconversation_column = \"conversations\"\nconversation_style = \"sharegpt\"\n",
                                 tok);
  ASSERT_EQ(ds->size(), 1u);
  const std::int64_t im_start = 151644, im_end = 151645;
  auto enc = [&](const std::string& s) { return tok->encode(s, false, false); };
  auto turn = [&](const std::string& role, const std::string& content, bool close) {
    return close ? concat({{im_start}, enc(role + "\n"), enc(content), {im_end}, enc("\n")})
                 : concat({{im_start}, enc(role + "\n"), enc(content)});
  };
  const Ids system = turn("system", "You are an AI assistant.", true);
  const Ids user1 = turn("user", "What is the meaning of life?", true);
  const Ids gpt1 = turn("assistant", "The meaning of life is 42.", true);
  const Ids user2 = turn("user", "That's ridiculous.", true);
  const Ids gpt2 = turn("assistant", "I agree.", false);  // the last assistant turn stays open, then EOS
  const auto s = ds->get(0);
  EXPECT_EQ(s.tokens, concat({system, user1, gpt1, user2, gpt2, {im_end}}));
  EXPECT_EQ(s.labels, concat({masked(system), masked(user1), gpt1, masked(user2), gpt2, {im_end}}));
}

TEST(TextDatasets, OpenAiMessagesInLlama3Format) {
  const auto path = fttest::write_temp(
      "chat.jsonl",
      R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}, {"role": "assistant", "content": "Hello."}]})"
      "\n");
  auto tok = fttest::llama3_json_tokenizer();
  auto ds = fttest::make_dataset("torchtune.datasets.chat_dataset",
                                 "source = \"json\"\ndata_files = " + quoted(path) +
                                     "\nconversation_column = \"messages\"\nconversation_style = \"openai\"\n",
                                 tok);
  const Ids system = llama3_turn(*tok, "system", "Be brief."), user = llama3_turn(*tok, "user", "Hi?"),
            assistant = llama3_turn(*tok, "assistant", "Hello.");
  const auto s = ds->get(0);
  EXPECT_EQ(s.tokens, concat({{kBos}, system, user, assistant, {kEos}}));
  EXPECT_EQ(s.labels, concat({{ft::kIgnoreIndex}, masked(system), masked(user), assistant, {ft::kIgnoreIndex}}));
}

TEST(TextDatasets, InstructDatasetWithColumnMap) {
  auto tok = fttest::llama3_json_tokenizer();
  auto ds = fttest::make_dataset("torchtune.datasets.instruct_dataset",
                                 "source = " + quoted(fttest::data_dir() + "/instruct_tiny.json") +
                                     "\ncolumn_map = {input = \"instruction\", output = \"response\"}\n",
                                 tok);
  ASSERT_EQ(ds->size(), 2u);
  const Ids user = llama3_turn(*tok, "user", "What time is it in London?");
  const Ids assistant = llama3_turn(*tok, "assistant", "It is 10:00 AM in London");
  const auto s = ds->get(0);
  EXPECT_EQ(s.tokens, concat({{kBos}, user, assistant, {kEos}}));
  EXPECT_EQ(s.labels, concat({{ft::kIgnoreIndex}, masked(user), assistant, {ft::kIgnoreIndex}}));
}

TEST(TextDatasets, SplitSlices) {
  auto tok = fttest::llama3_json_tokenizer();
  auto head =
      fttest::make_dataset("torchtune.datasets.alpaca_dataset", alpaca_source() + "split = \"train[:95%]\"\n", tok);
  auto tail =
      fttest::make_dataset("torchtune.datasets.alpaca_dataset", alpaca_source() + "split = \"train[95%:]\"\n", tok);
  auto all = fttest::make_dataset("torchtune.datasets.alpaca_dataset", alpaca_source(), tok);
  EXPECT_EQ(head->size(), 95u);
  EXPECT_EQ(tail->size(), 5u);
  EXPECT_EQ(tail->get(0).tokens, all->get(95).tokens);
  auto range =
      fttest::make_dataset("torchtune.datasets.alpaca_dataset", alpaca_source() + "split = \"train[10:20]\"\n", tok);
  EXPECT_EQ(range->size(), 10u);
  EXPECT_EQ(range->get(0).tokens, all->get(10).tokens);
}

TEST(TextDatasets, TextCompletionChunksWholeDocument) {
  auto tok = fttest::llama3_json_tokenizer("max_seq_len = 512\n");
  const std::string path = fttest::data_dir() + "/tinyshakespeare.txt";
  auto ds = fttest::make_dataset("torchtune.datasets.text_completion_dataset",
                                 "source = " + quoted(path) + "\nsample_by = \"document\"\n", tok);
  Ids all;
  for (std::size_t i = 0; i < ds->size(); ++i) {
    const auto s = ds->get(i);
    if (i + 1 < ds->size()) {
      EXPECT_EQ(s.tokens.size(), 512u);
    }
    EXPECT_EQ(s.labels, s.tokens);
    all.insert(all.end(), s.tokens.begin(), s.tokens.end());
  }
  EXPECT_EQ(all, concat({{kBos}, tok->encode(fttest::read_file(path), false, false), {kEos}}));
}

TEST(TextDatasets, TextCompletionJsonColumn) {
  auto tok = fttest::llama3_json_tokenizer();
  auto ds = fttest::make_dataset("torchtune.datasets.text_completion_dataset",
                                 alpaca_source() + "column = \"output\"\nadd_eos = false\n", tok);
  const auto records = fttest::read_json_file(fttest::data_dir() + "/alpaca_tiny.json");
  EXPECT_EQ(ds->size(), 100u);
  EXPECT_EQ(ds->get(3).tokens, concat({{kBos}, tok->encode(records[3]["output"].get<std::string>(), false, false)}));
}

TEST(TextDatasets, PackedKeepsDocumentsAndPositions) {
  auto tok = fttest::llama3_json_tokenizer("max_seq_len = 256\n");
  auto plain = fttest::make_dataset("torchtune.datasets.alpaca_dataset", alpaca_source(), tok);
  auto packed = fttest::make_dataset("torchtune.datasets.alpaca_dataset", alpaca_source() + "packed = true\n", tok);
  ASSERT_LT(packed->size(), plain->size());
  std::size_t doc = 0;
  for (std::size_t p = 0; p < packed->size(); ++p) {
    const auto pack = packed->get(p);
    ASSERT_EQ(pack.tokens.size(), 256u);
    ASSERT_EQ(std::accumulate(pack.seq_lens.begin(), pack.seq_lens.end(), std::int64_t{0}), 256);
    std::size_t start = 0;
    for (auto len : pack.seq_lens) {
      if (pack.tokens[start] == 0) {  // padding: every document starts with BOS
        EXPECT_EQ(start + len, 256u);
        for (std::size_t i = start; i < start + len; ++i) {
          EXPECT_EQ(pack.tokens[i], 0);
          EXPECT_EQ(pack.labels[i], ft::kIgnoreIndex);
        }
      } else {
        ASSERT_LT(doc, plain->size());
        const auto d = plain->get(doc++);
        ASSERT_EQ(d.tokens.size(), static_cast<std::size_t>(len));
        EXPECT_TRUE(std::equal(d.tokens.begin(), d.tokens.end(), pack.tokens.begin() + start));
        EXPECT_TRUE(std::equal(d.labels.begin(), d.labels.end(), pack.labels.begin() + start));
        for (std::int64_t i = 0; i < len; ++i) EXPECT_EQ(pack.input_pos[start + i], i);
      }
      start += len;
    }
  }
  EXPECT_EQ(doc, plain->size());
}

TEST(TextDatasets, PaddedCollatePackedBlockCausalMask) {
  ft::Sample a{{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12}, {0, 1, 2, 0, 1, 0}, {3, 2, 1}};
  ft::Sample b{{13, 14, 15, 16, 17, 18}, {19, 20, 21, 22, 23, 24}, {0, 1, 0, 1, 0, 1}, {2, 2, 2}};
  auto batch = fttest::make_collate("torchtune.data.padded_collate_packed", 0)->collate({a, b});
  // torchtune's padded_collate_packed docstring example.
  const bool expected[2][6][6] = {{{1, 0, 0, 0, 0, 0},
                                   {1, 1, 0, 0, 0, 0},
                                   {1, 1, 1, 0, 0, 0},
                                   {0, 0, 0, 1, 0, 0},
                                   {0, 0, 0, 1, 1, 0},
                                   {0, 0, 0, 0, 0, 1}},
                                  {{1, 0, 0, 0, 0, 0},
                                   {1, 1, 0, 0, 0, 0},
                                   {0, 0, 1, 0, 0, 0},
                                   {0, 0, 1, 1, 0, 0},
                                   {0, 0, 0, 0, 1, 0},
                                   {0, 0, 0, 0, 1, 1}}};
  // The collate hands on the document lengths; the mask is built only for a model that needs it.
  EXPECT_FALSE(batch.mask.defined());
  EXPECT_EQ(batch.document_lengths, (std::vector<std::vector<std::int64_t>>{{3, 2, 1}, {2, 2, 2}}));
  const at::Tensor dense = ft::block_causal_mask(batch.document_lengths, 6);
  ASSERT_EQ(dense.sizes(), (std::vector<std::int64_t>{2, 6, 6}));
  auto mask = dense.accessor<bool, 3>();
  for (int i = 0; i < 2; ++i)
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 6; ++c) EXPECT_EQ(mask[i][r][c], expected[i][r][c]) << i << " " << r << " " << c;
  EXPECT_EQ(batch.input_pos[1][3].item<std::int64_t>(), 1);
  EXPECT_EQ(batch.tokens[1][0].item<std::int64_t>(), 13);
  EXPECT_EQ(batch.labels[0][5].item<std::int64_t>(), 12);
}

TEST(TextDatasets, ClearErrors) {
  auto tok = fttest::llama3_json_tokenizer();
  // The default source, a Hub name, looked for in an empty cache.
  const std::string empty_cache = fttest::temp_dir();
  ::setenv("HF_HUB_CACHE", empty_cache.c_str(), 1);
  auto hub = fttest::error_of([&] { fttest::make_dataset("torchtune.datasets.alpaca_dataset", "", tok); });
  ::unsetenv("HF_HUB_CACHE");
  EXPECT_NE(hub.find("source = \"tatsu-lab/alpaca\": this Hugging Face Hub dataset is not in the local cache (looked "
                     "for " +
                     empty_cache + "/datasets--tatsu-lab--alpaca"),
            std::string::npos)
      << hub;
  EXPECT_NE(hub.find("hf download tatsu-lab/alpaca --repo-type dataset"), std::string::npos) << hub;
  auto no_tok =
      fttest::error_of([&] { fttest::make_dataset("torchtune.datasets.alpaca_dataset", alpaca_source(), nullptr); });
  EXPECT_NE(no_tok.find("[tokenizer]"), std::string::npos) << no_tok;
  auto column = fttest::error_of([&] {
    fttest::make_dataset("torchtune.datasets.alpaca_dataset", alpaca_source() + "column_map = {output = \"answer\"}\n",
                         tok);
  });
  EXPECT_NE(column.find("\"answer\""), std::string::npos) << column;
  auto split = fttest::error_of([&] {
    fttest::make_dataset("torchtune.datasets.alpaca_dataset", alpaca_source() + "split = \"validation\"\n", tok);
  });
  EXPECT_NE(split.find("split"), std::string::npos) << split;
  auto pack = fttest::error_of(
      [&] { fttest::make_dataset("torchtune.datasets.alpaca_dataset", alpaca_source() + "packed = true\n", tok); });
  EXPECT_NE(pack.find("max_seq_len"), std::string::npos) << pack;
}

}  // namespace
