#include "train/data_command.h"

#include "train/data_pipeline.h"

#include <ft/clock.h>
#include <ft/errors.h>
#include <ft/log.h>
#include <ft/loss.h>

#include <ATen/ATen.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace fthost {

namespace {

constexpr std::int64_t kSamplesShownAsText = 3;

// Masked spans in plain output. Mathematical white square brackets: unlike [], <> or {}, text
// (and the tokenizers' special tokens) practically never contains them.
constexpr const char* kMaskedOpen = "\u27e6";   // ⟦
constexpr const char* kMaskedClose = "\u27e7";  // ⟧
constexpr const char* kTrainedColour = "\x1b[32m";
constexpr const char* kMaskedColour = "\x1b[90m";
constexpr const char* kResetColour = "\x1b[0m";

bool stdout_takes_colour() {
  if (!::isatty(STDOUT_FILENO)) return false;
  if (const char* no_colour = std::getenv("NO_COLOR"); no_colour && *no_colour) return false;
  const char* term = std::getenv("TERM");
  return !(term && std::string(term) == "dumb");
}

void set_packed(ft::detail::ConfigDocument& doc, bool packed) {
  toml::node* datasets = doc.root().get("dataset");
  if (!datasets) return;
  if (auto* table = datasets->as_table()) table->insert_or_assign("packed", packed);
  if (auto* list = datasets->as_array())
    for (auto& item : *list)
      if (auto* table = item.as_table()) table->insert_or_assign("packed", packed);
}

bool datasets_packed(const ft::ConfigNode& root) {
  for (const auto& table : root.table_list("dataset"))
    if (table.get<bool>("packed", false)) return true;
  return false;
}

// The run's configuration with every dataset unpacked: the documents its packs are made of.
ft::ConfigNode unpacked(const ft::ConfigNode& root) {
  auto doc = std::make_shared<ft::detail::ConfigDocument>(*root.document());
  set_packed(*doc, false);
  return ft::detail::root_node(std::move(doc));
}

std::int64_t count_trained(const std::vector<std::int64_t>& labels, std::int64_t ignore_index) {
  return std::count_if(labels.begin(), labels.end(), [&](std::int64_t l) { return l != ignore_index; });
}

// Row 0 of a collated micro-batch of one sample: the tokens and labels the recipe trains on.
ft::Sample collated(const ft::Collate& collate, const ft::Sample& sample) {
  const ft::Batch batch = collate.collate({sample});
  auto row = [](const at::Tensor& t) {
    const at::Tensor r = t[0].contiguous().to(at::kLong);
    return std::vector<std::int64_t>(r.data_ptr<std::int64_t>(), r.data_ptr<std::int64_t>() + r.numel());
  };
  ft::Sample out;
  out.tokens = row(batch.tokens);
  out.labels = row(batch.labels);
  out.truncated = sample.truncated;
  return out;
}

// The tokens as text, each run of trained or masked tokens decoded on its own (a run ends at a
// message boundary, so no character is split); ids instead of text without a tokenizer.
std::string render(const ft::Sample& s, std::int64_t ignore_index, const ft::Tokenizer* tokenizer, bool colour) {
  std::string out;
  for (std::size_t begin = 0; begin < s.tokens.size();) {
    const bool trained = s.labels[begin] != ignore_index;
    std::size_t end = begin + 1;
    while (end < s.tokens.size() && (s.labels[end] != ignore_index) == trained) ++end;
    const std::vector<std::int64_t> ids(s.tokens.begin() + static_cast<std::ptrdiff_t>(begin),
                                        s.tokens.begin() + static_cast<std::ptrdiff_t>(end));
    std::string text;
    if (tokenizer) {
      text = tokenizer->decode(ids);
    } else {
      for (auto id : ids) text += (text.empty() ? "" : " ") + std::to_string(id);
      if (begin > 0) out += ' ';
    }
    if (colour)
      out += (trained ? kTrainedColour : kMaskedColour) + text + kResetColour;
    else
      out += trained ? text : kMaskedOpen + text + kMaskedClose;
    begin = end;
  }
  return out;
}

void print_sample(std::size_t index, const ft::Sample& s, std::int64_t ignore_index, const ft::Tokenizer* tokenizer,
                  bool colour) {
  std::cout << "── sample " << index << ": " << s.tokens.size() << " tokens, " << count_trained(s.labels, ignore_index)
            << " trained" << (s.truncated ? ", truncated to max_seq_len" : "") << " ──\n"
            << render(s, ignore_index, tokenizer, colour) << "\n\n";
}

nlohmann::json sample_json(const char* kind, std::size_t index, const ft::Sample& s) {
  nlohmann::json j{{kind, index}, {"tokens", s.tokens}, {"labels", s.labels}};
  if (!s.input_pos.empty()) j["input_pos"] = s.input_pos;
  if (!s.seq_lens.empty()) j["seq_lens"] = s.seq_lens;
  if (std::string(kind) == "sample") j["truncated"] = s.truncated;
  return j;
}

// Progress on stderr once a dataset takes more than a second: redrawn in place on a terminal,
// a line every 10 s elsewhere.
class Progress {
 public:
  explicit Progress(std::size_t total) : total_(total), tty_(::isatty(STDERR_FILENO)) {}
  void update(std::size_t done) {
    const double now = ft::seconds_since(start_);
    if (now < 1.0 || now - last_ < (tty_ ? 0.2 : 10.0)) return;
    last_ = now;
    const std::string line = fmt::format("fthost data: {}/{} samples ({:.0f}%), {:.0f} s", done, total_,
                                         100.0 * static_cast<double>(done) / static_cast<double>(total_), now);
    std::cerr << (tty_ ? "\r" + line : line + "\n") << std::flush;
    drawn_ = true;
  }
  void finish() {
    if (drawn_ && tty_) std::cerr << "\r\x1b[K" << std::flush;
    drawn_ = false;
  }

 private:
  std::size_t total_;
  bool tty_;
  ft::Clock::time_point start_ = ft::Clock::now();
  double last_ = 0;
  bool drawn_ = false;
};

// Nearest rank: the smallest length at least `percent` % of the samples do not exceed.
std::int64_t percentile(const std::vector<std::int64_t>& sorted, double percent) {
  const auto rank = static_cast<std::size_t>(std::ceil(percent / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::max<std::size_t>(rank, 1) - 1];
}

std::string percent(double part, double whole) {
  if (whole <= 0) return "-";
  const double p = 100.0 * part / whole;
  return p > 0 && p < 1 ? fmt::format("{:.2f}%", p) : fmt::format("{:.1f}%", p);
}

struct Totals {
  std::vector<std::int64_t> lengths;  // per sample
  std::int64_t tokens = 0, trained = 0, truncated = 0;
};

}  // namespace

void log_to_stderr() {
  auto logger = spdlog::stderr_color_mt("fthost_data");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");  // main.cpp's
}

void set_datasets_packed(ft::detail::ConfigDocument& doc) {
  set_packed(doc, true);
  doc.mark_overridden("dataset.packed");
}

int show_data(const ft::Registry& registry, const ft::ConfigNode& root, const TrainingSettings& settings,
              const DataViewOptions& options) {
  if (options.samples && *options.samples < 0)
    throw ft::ConfigError("--samples: expected a number of samples (0 or more), got " +
                          std::to_string(*options.samples));
  if (!root.is_table("dataset") && !root.is_table_list("dataset"))
    throw ft::ConfigError("dataset: required by fthost data: a [dataset] table (or a [[dataset]] list)");

  // The recipe's order and arguments: tokenizer, dataset, collate with the loss's ignore index,
  // padding to a multiple of the tensor-parallel degree.
  const std::shared_ptr<ft::Tokenizer> tokenizer = build_tokenizer(registry, root);
  const std::int64_t ignore_index =
      root.is_table("loss") ? registry.instantiate<ft::Loss>(root.table("loss"))->ignore_index() : ft::kIgnoreIndex;
  const std::shared_ptr<ft::Dataset> dataset = build_dataset(registry, root, tokenizer);
  const std::shared_ptr<ft::Collate> collate =
      build_collate(registry, root, tokenizer.get(), ignore_index, settings.tensor_parallel_dim);
  const bool packed = datasets_packed(root);
  // Packs hide where their documents end and the padding begins: the documents come from the
  // same datasets unpacked.
  const std::shared_ptr<ft::Dataset> documents = packed ? build_dataset(registry, unpacked(root), tokenizer) : dataset;

  const bool colour = !options.json && stdout_takes_colour();
  const std::size_t size = documents->size();
  // How many of `count` samples (or packs) to print.
  auto shown_of = [&](std::size_t count) {
    if (options.samples) return std::min(count, static_cast<std::size_t>(*options.samples));
    return options.json ? count : std::min(count, static_cast<std::size_t>(kSamplesShownAsText));
  };
  const std::size_t shown = shown_of(size);
  if (!options.json) {
    std::cout << (colour ? std::string("Trained-on tokens are ") + kTrainedColour + "green" + kResetColour +
                               ", masked ones (label " + std::to_string(ignore_index) + ", not trained on) " +
                               kMaskedColour + "grey" + kResetColour + ".\n\n"
                         : std::string("Masked tokens (label ") + std::to_string(ignore_index) +
                               ", not trained on) are shown " + kMaskedOpen + "like this" + kMaskedClose +
                               "; the rest is trained on.\n\n");
  }

  Totals totals;
  totals.lengths.reserve(size);
  Progress progress(size);
  for (std::size_t i = 0; i < size; ++i) {
    const ft::Sample sample = documents->get(i);
    if (i < shown) {
      // Unpacked samples pass through the recipe's collate; documents of packs cannot (it takes packs).
      const ft::Sample view = packed ? sample : collated(*collate, sample);
      if (options.json)
        std::cout << sample_json("sample", i, view).dump() << "\n";
      else
        print_sample(i, view, ignore_index, tokenizer.get(), colour);
      if (i + 1 == shown) std::cout << std::flush;
    }
    const auto length = static_cast<std::int64_t>(sample.tokens.size());
    totals.lengths.push_back(length);
    totals.tokens += length;
    totals.trained += count_trained(sample.labels, ignore_index);
    totals.truncated += sample.truncated ? 1 : 0;
    progress.update(i + 1);
  }
  progress.finish();

  std::int64_t packs = 0, pack_len = 0, padding = 0;
  if (packed) {
    packs = static_cast<std::int64_t>(dataset->size());
    pack_len = packs > 0 ? static_cast<std::int64_t>(dataset->get(0).tokens.size()) : 0;
    // Every token of every document is in a pack (whole, or split across packs with
    // split_across_pack); the rest of the packs is padding.
    padding = packs * pack_len - totals.tokens;
    if (options.json)
      for (std::size_t p = 0; p < shown_of(static_cast<std::size_t>(packs)); ++p)
        std::cout << sample_json("pack", p, dataset->get(p)).dump() << "\n";
  }

  // The first micro-batch in dataset order (one pack: its mask is pack_len squared).
  std::vector<std::int64_t> batch_shape;
  double batch_padding = 0;
  if (dataset->size() > 0) {
    const std::size_t batch_size =
        packed ? 1 : std::min(dataset->size(), static_cast<std::size_t>(settings.batch_size));
    std::vector<ft::Sample> samples;
    std::int64_t real = 0;
    for (std::size_t i = 0; i < batch_size; ++i) {
      samples.push_back(dataset->get(i));
      real += static_cast<std::int64_t>(samples.back().tokens.size());
    }
    const ft::Batch batch = collate->collate(samples);
    batch_shape = batch.tokens.sizes().vec();
    batch_padding = static_cast<double>(batch.tokens.numel() - real) / static_cast<double>(batch.tokens.numel());
  }

  std::vector<std::int64_t> sorted = totals.lengths;
  std::sort(sorted.begin(), sorted.end());
  const std::int64_t max_seq_len = tokenizer ? tokenizer->max_seq_len() : 0;
  const double tokens = static_cast<double>(totals.tokens);

  if (options.json) {
    nlohmann::json stats{{"samples", size},
                         {"tokens", totals.tokens},
                         {"trained_tokens", totals.trained},
                         {"trained_fraction", tokens > 0 ? static_cast<double>(totals.trained) / tokens : 0.0},
                         {"truncated_samples", totals.truncated},
                         {"max_seq_len", max_seq_len > 0 ? nlohmann::json(max_seq_len) : nlohmann::json()},
                         {"packed", packed},
                         {"micro_batch_shape", batch_shape}};
    if (!sorted.empty())
      stats["length"] = {{"min", sorted.front()},
                         {"p50", percentile(sorted, 50)},
                         {"p90", percentile(sorted, 90)},
                         {"p99", percentile(sorted, 99)},
                         {"max", sorted.back()}};
    if (packed) {
      stats["packs"] = packs;
      stats["pack_len"] = pack_len;
      stats["padding_tokens"] = padding;
      stats["padding_fraction"] = packs > 0 ? static_cast<double>(padding) / static_cast<double>(packs * pack_len) : 0;
    }
    std::cout << nlohmann::json{{"stats", stats}}.dump() << "\n";
    return 0;
  }

  std::cout << "── whole dataset: " << size << " samples" << (packed ? " (the documents of the packs)" : "") << " ──\n";
  if (!sorted.empty())
    std::cout << fmt::format("tokens per sample  min {}, p50 {}, p90 {}, p99 {}, max {} ({} in all)\n", sorted.front(),
                             percentile(sorted, 50), percentile(sorted, 90), percentile(sorted, 99), sorted.back(),
                             totals.tokens);
  std::cout << fmt::format("trained on         {} of {} tokens ({})\n", totals.trained, totals.tokens,
                           percent(static_cast<double>(totals.trained), tokens));
  std::cout << fmt::format("truncated          {} samples cut to max_seq_len{}\n", totals.truncated,
                           max_seq_len > 0 ? " (" + std::to_string(max_seq_len) + ")" : "");
  if (packed)
    std::cout << fmt::format(
        "packed             {} packs of {} tokens, {} of them padding ({})\n", packs, pack_len, padding,
        percent(static_cast<double>(padding), static_cast<double>(packs) * static_cast<double>(pack_len)));
  if (!batch_shape.empty()) {
    std::string shape;
    for (auto d : batch_shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    const std::string collate_name = root.table("collate").component();
    if (packed)
      std::cout << fmt::format("first micro-batch  {}: the first pack collates to [{}]\n", collate_name, shape);
    else
      std::cout << fmt::format("first micro-batch  {}: the first {} samples collate to [{}], {} of it padding\n",
                               collate_name, batch_shape[0], shape, percent(batch_padding, 1.0));
  }
  return 0;
}

}  // namespace fthost
