// `fthost data` through the real binary on the Alpaca fixture with the Llama 3 tokenizer.json:
// the printed masked / trained spans against the records' own prompt and response, the --json
// ids against ids built here from the tokenizer's plain encode(), and every statistic against
// a count made here from the --json samples, the data file and torchtune's packing rule.
#include "text_data_support.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

namespace {

using fttest::concat;
using Ids = std::vector<std::int64_t>;

constexpr std::int64_t kBos = 128000, kEos = 128001, kStartHeader = 128006, kEndHeader = 128007, kEot = 128009;
constexpr std::int64_t kMaxSeqLen = 256;  // configs/tiny_alpaca_llama3.toml's tokenizer.max_seq_len
const std::string kMaskedOpen = "\u27e6", kMaskedClose = "\u27e7";

struct Output {
  int exit_code;
  std::string out;  // stdout alone: the view
  std::string err;
};

// Runs `fthost <args>`, stdout and stderr kept apart.
Output run_fthost_apart(const std::string& args) {
  const fttest::TempDir dir;
  const std::string cmd = std::string(FTHOST_BINARY) + " " + args + " 2>" + dir.file("stderr.txt");
  const auto r = fttest::run_command_stdout(cmd);
  return {r.exit_code, r.output, fttest::read_file(dir.file("stderr.txt"))};
}

// `fthost data` on the tiny Alpaca config, its files taken from the fixtures.
Output run_data(const std::string& args) {
  return run_fthost_apart("data --config " + std::string(FT_SOURCE_DIR) +
                          "/configs/tiny_alpaca_llama3.toml tokenizer.path=" + fttest::tokenizers_dir() +
                          "/llama3/tokenizer.json dataset.source=" + fttest::data_dir() + "/alpaca_tiny.json " + args);
}

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

std::vector<nlohmann::json> lines_with(const std::vector<nlohmann::json>& lines, const std::string& key) {
  std::vector<nlohmann::json> out;
  for (const auto& l : lines)
    if (l.contains(key)) out.push_back(l);
  return out;
}

std::string strip(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n\r"), e = s.find_last_not_of(" \t\n\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// torchtune's Alpaca prompt (AlpacaToMessages), written out.
std::string alpaca_prompt(const nlohmann::json& r) {
  const std::string input = r.at("input").get<std::string>();
  if (input.empty())
    return "Below is an instruction that describes a task. Write a response that appropriately completes the "
           "request.\n\n### Instruction:\n" +
           r.at("instruction").get<std::string>() + "\n\n### Response:\n";
  return "Below is an instruction that describes a task, paired with an input that provides further context. "
         "Write a response that appropriately completes the request.\n\n### Instruction:\n" +
         r.at("instruction").get<std::string>() + "\n\n### Input:\n" + input + "\n\n### Response:\n";
}

nlohmann::json alpaca_records() { return fttest::read_json_file(fttest::data_dir() + "/alpaca_tiny.json"); }

// One printed sample: its header's counts and the text inside and outside the markers.
struct PrintedSample {
  std::int64_t tokens = 0, trained = 0;
  bool truncated = false;
  std::vector<std::string> masked;  // each ⟦...⟧ span
  std::string trained_text;         // everything outside them
};

std::vector<PrintedSample> printed_samples(const std::string& out) {
  std::vector<PrintedSample> samples;
  const std::string header = "── sample ";
  std::size_t at = out.find(header);
  while (at != std::string::npos) {
    const std::size_t body = out.find('\n', at) + 1;
    std::size_t next = out.find("\n── ", body);
    if (next == std::string::npos) next = out.size();
    PrintedSample s;
    const std::string head = out.substr(at, body - at);
    std::sscanf(head.c_str() + head.find(": ") + 2, "%ld tokens, %ld trained", &s.tokens, &s.trained);
    s.truncated = head.find("truncated") != std::string::npos;
    std::string text = out.substr(body, next - body);
    text = text.substr(0, text.size() - 1);  // the blank line after each sample
    for (std::size_t p = 0; p < text.size();) {
      const std::size_t open = text.find(kMaskedOpen, p);
      s.trained_text += text.substr(p, open == std::string::npos ? std::string::npos : open - p);
      if (open == std::string::npos) break;
      const std::size_t close = text.find(kMaskedClose, open);
      EXPECT_NE(close, std::string::npos) << "unclosed masked span in: " << text;
      s.masked.push_back(text.substr(open + kMaskedOpen.size(), close - open - kMaskedOpen.size()));
      p = close + kMaskedClose.size();
    }
    samples.push_back(s);
    at = next == out.size() ? std::string::npos : out.find(header, next);
  }
  return samples;
}

TEST(DataCommand, MaskedSpansAreThePromptAndTrainedSpansTheResponse) {
  const Output r = run_data("--samples 100");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(kMaskedOpen + "like this" + kMaskedClose), std::string::npos) << "the legend names the markers";
  const auto records = alpaca_records();
  const auto samples = printed_samples(r.out);
  ASSERT_EQ(samples.size(), records.size());
  std::size_t whole = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    const std::string user = "<|start_header_id|>user<|end_header_id|>\n\n" + strip(alpaca_prompt(records[i])) +
                             "<|eot_id|>",
                      assistant = "<|start_header_id|>assistant<|end_header_id|>\n\n" +
                                  strip(records[i].at("output").get<std::string>()) + "<|eot_id|>";
    ASSERT_FALSE(s.masked.empty()) << i;
    EXPECT_NE(s.masked[0].find(records[i].at("instruction").get<std::string>()), std::string::npos) << i;
    if (s.truncated) continue;  // the cut-off end is checked through --json below
    ++whole;
    // BOS and the user turn masked, the assistant turn trained on, EOS masked.
    ASSERT_EQ(s.masked.size(), 2u) << i;
    EXPECT_EQ(s.masked[0], "<|begin_of_text|>" + user) << i;
    EXPECT_EQ(s.trained_text, assistant) << i;
    EXPECT_EQ(s.masked[1], "<|end_of_text|>") << i;
  }
  EXPECT_GT(whole, 80u);
  EXPECT_LT(whole, samples.size()) << "some records exceed max_seq_len " << kMaxSeqLen;
}

TEST(DataCommand, TrainOnInputTrainsOnAllButBosAndEos) {
  const Output r = run_data("dataset.train_on_input=true --samples 100");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto records = alpaca_records();
  const auto samples = printed_samples(r.out);
  ASSERT_EQ(samples.size(), records.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(samples[i].masked, (std::vector<std::string>{"<|begin_of_text|>", "<|end_of_text|>"})) << i;
    EXPECT_NE(samples[i].trained_text.find(records[i].at("instruction").get<std::string>()), std::string::npos) << i;
    EXPECT_EQ(samples[i].trained, samples[i].tokens - 2) << i;
  }
}

// One Llama 3 turn from plain encode() calls: <|start_header_id|>role<|end_header_id|>\n\n content <|eot_id|>.
Ids llama3_turn(const ft::Tokenizer& tok, const std::string& role, const std::string& content) {
  return concat({{kStartHeader},
                 tok.encode(role, false, false),
                 {kEndHeader},
                 tok.encode("\n\n", false, false),
                 tok.encode(strip(content), false, false),
                 {kEot}});
}

TEST(DataCommand, JsonIdsAndLabelsAreTheTokenizersIds) {
  const Output r = run_data("--json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = json_lines(r.out);
  const auto samples = lines_with(lines, "sample");
  const auto records = alpaca_records();
  ASSERT_EQ(samples.size(), records.size()) << "--json prints every sample by default";
  auto tok = fttest::llama3_json_tokenizer();  // no max_seq_len: truncation is done here
  for (std::size_t i = 0; i < records.size(); ++i) {
    ASSERT_EQ(samples[i].at("sample").get<std::size_t>(), i);
    const Ids user = llama3_turn(*tok, "user", alpaca_prompt(records[i]));
    const Ids assistant = llama3_turn(*tok, "assistant", records[i].at("output").get<std::string>());
    Ids tokens = concat({{kBos}, user, assistant, {kEos}});
    Ids labels = concat({{ft::kIgnoreIndex}, Ids(user.size(), ft::kIgnoreIndex), assistant, {ft::kIgnoreIndex}});
    const bool cut = static_cast<std::int64_t>(tokens.size()) > kMaxSeqLen;
    if (cut) {  // torchtune's truncate: the first max_seq_len tokens, the last one EOS (masked)
      tokens.resize(kMaxSeqLen);
      labels.resize(kMaxSeqLen);
      tokens.back() = kEos;
      labels.back() = ft::kIgnoreIndex;
    }
    EXPECT_EQ(samples[i].at("tokens").get<Ids>(), tokens) << i;
    EXPECT_EQ(samples[i].at("labels").get<Ids>(), labels) << i;
    EXPECT_EQ(samples[i].at("truncated").get<bool>(), cut) << i;
  }
}

// torchtune's recipe pads every micro-batch to a multiple of tensor_parallel_dim (its collate's
// pad_to_multiple_of), so the samples `fthost data` shows are padded the same way.
TEST(DataCommand, TensorParallelSamplesArePaddedToAMultipleOfTheDegree) {
  const Output r = run_data(
      "--json tensor_parallel_dim=2 tensor_parallel_plan._component_=torchtune.models.llama3.base_llama_tp_plan");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = json_lines(r.out);
  const auto samples = lines_with(lines, "sample");
  const auto records = alpaca_records();
  ASSERT_EQ(samples.size(), records.size());
  auto tok = fttest::llama3_json_tokenizer();  // no max_seq_len: the lengths are capped here
  auto padded = [](std::int64_t n) { return (n + 1) / 2 * 2; };
  std::vector<std::int64_t> lengths;
  std::size_t odd = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const std::size_t full = 2 + llama3_turn(*tok, "user", alpaca_prompt(records[i])).size() +
                             llama3_turn(*tok, "assistant", records[i].at("output").get<std::string>()).size();
    const std::int64_t length = std::min<std::int64_t>(static_cast<std::int64_t>(full), kMaxSeqLen);
    lengths.push_back(length);
    odd += length % 2;
    const auto tokens = samples[i].at("tokens").get<Ids>();
    const auto labels = samples[i].at("labels").get<Ids>();
    ASSERT_EQ(static_cast<std::int64_t>(tokens.size()), padded(length)) << i;
    ASSERT_EQ(labels.size(), tokens.size()) << i;
    for (std::size_t k = static_cast<std::size_t>(length); k < tokens.size(); ++k) {
      EXPECT_EQ(tokens[k], tok->pad_id()) << i;
      EXPECT_EQ(labels[k], ft::kIgnoreIndex) << i;
    }
  }
  EXPECT_GT(odd, 0u) << "no sample of odd length: the padding would go unseen";
  const auto stats = lines_with(lines, "stats").at(0).at("stats");
  EXPECT_EQ(stats.at("micro_batch_shape").get<Ids>(),
            (Ids{4, padded(*std::max_element(lengths.begin(), lengths.begin() + 4))}))
      << "batch_size 4, padded to the longest rounded up to a multiple of 2";
  EXPECT_EQ(stats.at("tokens").get<std::int64_t>(), std::accumulate(lengths.begin(), lengths.end(), std::int64_t{0}))
      << "the statistics count the samples' own tokens, not the padding";
}

// Nearest rank, computed here on its own.
std::int64_t nearest_rank(std::vector<std::int64_t> v, double p) {
  std::sort(v.begin(), v.end());
  std::size_t k = 0;
  while (k + 1 < v.size() && static_cast<double>(k + 1) < p / 100.0 * static_cast<double>(v.size())) ++k;
  return v[k];
}

// The number after `label` in the text view's statistics.
std::int64_t number_after(const std::string& out, const std::string& label) {
  const auto at = out.find(label);
  EXPECT_NE(at, std::string::npos) << label << " not in:\n" << out;
  return at == std::string::npos ? -1 : std::stoll(out.substr(at + label.size()));
}

TEST(DataCommand, StatisticsAgreeWithADirectCount) {
  const Output r = run_data("--json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = json_lines(r.out);
  const auto samples = lines_with(lines, "sample");
  const auto stats_lines = lines_with(lines, "stats");
  ASSERT_EQ(stats_lines.size(), 1u);
  const auto& stats = stats_lines[0].at("stats");

  std::vector<std::int64_t> lengths;
  std::int64_t tokens = 0, trained = 0, truncated = 0;
  for (const auto& s : samples) {
    const auto labels = s.at("labels").get<Ids>();
    lengths.push_back(static_cast<std::int64_t>(labels.size()));
    tokens += static_cast<std::int64_t>(labels.size());
    trained += std::count_if(labels.begin(), labels.end(), [](std::int64_t l) { return l != ft::kIgnoreIndex; });
  }
  // Truncated: the records whose full rendering, tokenized here without a limit, is longer.
  auto tok = fttest::llama3_json_tokenizer();
  for (const auto& rec : alpaca_records()) {
    const std::size_t full = 2 + llama3_turn(*tok, "user", alpaca_prompt(rec)).size() +
                             llama3_turn(*tok, "assistant", rec.at("output").get<std::string>()).size();
    if (static_cast<std::int64_t>(full) > kMaxSeqLen) ++truncated;
  }
  EXPECT_GT(truncated, 0);
  EXPECT_EQ(stats.at("samples").get<std::size_t>(), alpaca_records().size());
  EXPECT_EQ(stats.at("tokens").get<std::int64_t>(), tokens);
  EXPECT_EQ(stats.at("trained_tokens").get<std::int64_t>(), trained);
  EXPECT_NEAR(stats.at("trained_fraction").get<double>(), static_cast<double>(trained) / tokens, 1e-12);
  EXPECT_EQ(stats.at("truncated_samples").get<std::int64_t>(), truncated);
  EXPECT_EQ(stats.at("max_seq_len").get<std::int64_t>(), kMaxSeqLen);
  const auto& length = stats.at("length");
  EXPECT_EQ(length.at("min").get<std::int64_t>(), *std::min_element(lengths.begin(), lengths.end()));
  EXPECT_EQ(length.at("max").get<std::int64_t>(), *std::max_element(lengths.begin(), lengths.end()));
  EXPECT_EQ(length.at("max").get<std::int64_t>(), kMaxSeqLen);
  for (const auto& [key, p] : {std::pair<const char*, double>{"p50", 50}, {"p90", 90}, {"p99", 99}})
    EXPECT_EQ(length.at(key).get<std::int64_t>(), nearest_rank(lengths, p)) << key;
  EXPECT_EQ(stats.at("micro_batch_shape").get<Ids>(),
            (Ids{4, std::max(std::max(lengths[0], lengths[1]), std::max(lengths[2], lengths[3]))}))
      << "batch_size 4, padded to the longest";

  // The text view reports the same numbers.
  const Output text = run_data("--samples 0");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.find("── sample"), std::string::npos) << "--samples 0 shows no sample";
  EXPECT_EQ(number_after(text.out, "whole dataset: "), static_cast<std::int64_t>(samples.size()));
  EXPECT_EQ(number_after(text.out, "\ntrained on"), trained);
  EXPECT_EQ(number_after(text.out, "\ntrained on         " + std::to_string(trained) + " of"), tokens);
  EXPECT_EQ(number_after(text.out, "\ntruncated"), truncated);
  EXPECT_EQ(number_after(text.out, "p50"), nearest_rank(lengths, 50));
}

// torchtune's PackedDataset without split_across_pack, written out: samples in order, a pack
// closed when the next sample would overflow it. Returns each pack's sample indices.
std::vector<std::vector<std::size_t>> greedy_packs(const std::vector<std::int64_t>& lengths, std::int64_t pack_len) {
  std::vector<std::vector<std::size_t>> packs(1);
  std::int64_t used = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (used + lengths[i] > pack_len) {
      packs.emplace_back();
      used = 0;
    }
    packs.back().push_back(i);
    used += lengths[i];
  }
  return packs;
}

TEST(DataCommand, PackedStatisticsAgreeWithPackingTheSamplesDirectly) {
  const Output r = run_data("--json --packed");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = json_lines(r.out);
  const auto samples = lines_with(lines, "sample"), packs = lines_with(lines, "pack");
  const nlohmann::json stats = lines_with(lines, "stats").at(0).at("stats");
  std::vector<std::int64_t> lengths;
  for (const auto& s : samples) lengths.push_back(static_cast<std::int64_t>(s.at("tokens").size()));
  const auto expected = greedy_packs(lengths, kMaxSeqLen);
  const std::int64_t real = std::accumulate(lengths.begin(), lengths.end(), std::int64_t{0});
  const std::int64_t padding = static_cast<std::int64_t>(expected.size()) * kMaxSeqLen - real;

  EXPECT_TRUE(stats.at("packed").get<bool>());
  EXPECT_EQ(stats.at("packs").get<std::size_t>(), expected.size());
  EXPECT_EQ(stats.at("pack_len").get<std::int64_t>(), kMaxSeqLen);
  EXPECT_EQ(stats.at("padding_tokens").get<std::int64_t>(), padding);
  EXPECT_NEAR(stats.at("padding_fraction").get<double>(),
              static_cast<double>(padding) / static_cast<double>(expected.size() * kMaxSeqLen), 1e-12);
  EXPECT_EQ(stats.at("samples").get<std::size_t>(), alpaca_records().size()) << "the documents are counted";
  EXPECT_EQ(stats.at("micro_batch_shape").get<Ids>(), (Ids{1, kMaxSeqLen}));

  // Each pack printed holds its samples' tokens and labels in order, then padding (id 0, -100).
  ASSERT_EQ(packs.size(), expected.size());
  for (std::size_t p = 0; p < packs.size(); ++p) {
    Ids tokens, labels, seq_lens;
    for (auto i : expected[p]) {
      const auto t = samples[i].at("tokens").get<Ids>(), l = samples[i].at("labels").get<Ids>();
      tokens.insert(tokens.end(), t.begin(), t.end());
      labels.insert(labels.end(), l.begin(), l.end());
      seq_lens.push_back(static_cast<std::int64_t>(t.size()));
    }
    const auto pad = kMaxSeqLen - static_cast<std::int64_t>(tokens.size());
    if (pad > 0) seq_lens.push_back(pad);
    tokens.resize(kMaxSeqLen, 0);
    labels.resize(kMaxSeqLen, ft::kIgnoreIndex);
    EXPECT_EQ(packs[p].at("tokens").get<Ids>(), tokens) << p;
    EXPECT_EQ(packs[p].at("labels").get<Ids>(), labels) << p;
    EXPECT_EQ(packs[p].at("seq_lens").get<Ids>(), seq_lens) << p;
  }

  // dataset.packed = true is the same as --packed.
  const Output by_key = run_data("--json dataset.packed=true");
  ASSERT_EQ(by_key.exit_code, 0) << by_key.err;
  EXPECT_EQ(by_key.out, r.out);
}

TEST(DataCommand, TextCompletionPackedAcrossPacks) {
  // The whole Shakespeare file is one document in 256-token chunks, each split into a pack.
  const Output r =
      run_fthost_apart("data --json --config " + std::string(FT_SOURCE_DIR) +
                       "/configs/tiny_text_completion_packed.toml tokenizer.path=" + fttest::tokenizers_dir() +
                       "/llama3/tokenizer.json dataset.source=" + fttest::data_dir() + "/tinyshakespeare.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string& out = r.out;
  const auto lines = json_lines(out);
  const nlohmann::json stats = lines_with(lines, "stats").at(0).at("stats");
  // Counted here: the file encoded with BOS and EOS, as text_completion_dataset does.
  auto tok = fttest::llama3_json_tokenizer();
  const auto total = static_cast<std::int64_t>(
      tok->encode(fttest::read_file(fttest::data_dir() + "/tinyshakespeare.txt"), true, true).size());
  const std::int64_t packs = (total + kMaxSeqLen - 1) / kMaxSeqLen;
  EXPECT_EQ(stats.at("tokens").get<std::int64_t>(), total);
  EXPECT_EQ(stats.at("trained_tokens").get<std::int64_t>(), total) << "text completion trains on every token";
  EXPECT_EQ(stats.at("packs").get<std::int64_t>(), packs);
  EXPECT_EQ(stats.at("padding_tokens").get<std::int64_t>(), packs * kMaxSeqLen - total);
  EXPECT_EQ(stats.at("truncated_samples").get<std::int64_t>(), 0) << "chunks lose no text";
}

TEST(DataCommand, ClearErrorsForABadConfig) {
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"dataset.source=/nonexistent/alpaca.json", "/nonexistent/alpaca.json"},
      {"--packed ~tokenizer.max_seq_len", "dataset.packed: packing needs a max_seq_len"},
      {"--samples -1", "--samples: expected a number of samples (0 or more), got -1"},
      {"~dataset", "dataset: required by fthost data"},
      {"dataset._component_=torchtune.datasets.no_such_dataset", "torchtune.datasets.no_such_dataset"},
  };
  for (const auto& c : cases) {
    const Output r = run_data(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << c.args;
  }
  const auto no_config = fttest::run_fthost("data");
  EXPECT_EQ(no_config.exit_code, 2);
  EXPECT_NE(no_config.output.find("--config: required"), std::string::npos) << no_config.output;
  const auto not_data =
      fttest::run_fthost("validate --json --config " + std::string(FT_SOURCE_DIR) + "/configs/tiny_alpaca_llama3.toml");
  EXPECT_EQ(not_data.exit_code, 2);
  EXPECT_NE(not_data.output.find("--json is an option of `fthost data` and `fthost plan`"), std::string::npos)
      << not_data.output;
}

TEST(DataCommand, InTheHelp) {
  const auto r = fttest::run_fthost("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* text : {"fthost data --config", "--samples", "--packed", "--json"})
    EXPECT_NE(r.output.find(text), std::string::npos) << text;
}

}  // namespace
