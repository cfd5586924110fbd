#include "train/data_command.h"

#include "train/data_loader.h"
#include "train/data_pipeline.h"

#include <ft/clock.h>
#include <ft/errors.h>
#include <ft/image_transform.h>
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
#include <optional>
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
  out.images = sample.images;  // as the model transform made them, before any padding
  return out;
}

// The [begin, end) runs of text positions an image's mask lets see it.
std::vector<std::pair<std::int64_t, std::int64_t>> seeing_positions(const ft::SampleImage& image) {
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  if (!image.encoder_mask.defined()) return runs;
  const at::Tensor rows = image.encoder_mask.any(-1).to(at::kBool).contiguous();
  const bool* seen = rows.data_ptr<bool>();
  for (std::int64_t i = 0; i < rows.numel();) {
    if (!seen[i]) {
      ++i;
      continue;
    }
    std::int64_t end = i;
    while (end < rows.numel() && seen[end]) ++end;
    runs.emplace_back(i, end);
    i = end;
  }
  return runs;
}

// Where image k's tokens sit when the model takes them in place (Llama 4's tile grid): [begin,
// end) of the k-th image's run of image_tokens, the images' runs following each other in order.
std::optional<std::pair<std::int64_t, std::int64_t>> in_place_tokens(const ft::Sample& s, std::size_t k,
                                                                     const ft::ImageTransform* transform) {
  if (!transform || transform->cross_attends() || k >= s.images.size()) return std::nullopt;
  auto from = s.tokens.begin();
  for (std::size_t i = 0; i <= k; ++i) {
    const std::vector<std::int64_t> run = transform->image_tokens(s.images[i]);
    const auto at = std::search(from, s.tokens.end(), run.begin(), run.end());
    if (at == s.tokens.end()) return std::nullopt;
    if (i == k)
      return std::make_pair(static_cast<std::int64_t>(at - s.tokens.begin()),
                            static_cast<std::int64_t>(at - s.tokens.begin() + static_cast<std::ptrdiff_t>(run.size())));
    from = at + static_cast<std::ptrdiff_t>(run.size());
  }
  return std::nullopt;
}

// An image of rows x columns tiles and one more: Llama 4's global thumbnail, its last tile.
bool has_thumbnail(const ft::SampleImage& image) { return image.tiles.size(0) == image.rows * image.columns + 1; }

std::string describe_image(const ft::Sample& s, std::size_t index, const ft::ImageTransform* transform) {
  const ft::SampleImage& image = s.images[index];
  std::string where;
  if (image.encoder_mask.defined()) {
    std::string positions;
    for (const auto& [begin, end] : seeing_positions(image))
      positions += (positions.empty() ? "" : ", ") + std::to_string(begin) + "-" + std::to_string(end - 1);
    where = "seen by tokens " + (positions.empty() ? std::string("none") : positions);
  } else if (const auto run = in_place_tokens(s, index, transform)) {
    where = fmt::format("its tile grid is tokens {}-{}, whose {} patch tokens the model fills with its features",
                        run->first, run->second - 1, image.tiles.size(0) * transform->tokens_per_tile());
  } else {
    where = "no text position refers to it";
  }
  return fmt::format("  image {}: {}x{} canvas, {} tile(s) of {}x{} px{}; {}", index, image.rows, image.columns,
                     image.tiles.size(0), image.tiles.size(-2), image.tiles.size(-1),
                     has_thumbnail(image) ? " (the last a global thumbnail)" : "", where);
}

// `ids` (the tokens from position `first` on) decoded, except inside an image's tokens: there each
// run of one repeated token is decoded once and counted ("<|patch|>×144").
std::string decode_compact(const ft::Tokenizer& tokenizer, const std::vector<std::int64_t>& ids, std::int64_t first,
                           const std::vector<std::pair<std::int64_t, std::int64_t>>& image_runs) {
  const auto in_image = [&](std::size_t i) {
    const std::int64_t position = first + static_cast<std::int64_t>(i);
    for (const auto& [begin, end] : image_runs)
      if (position >= begin && position < end) return true;
    return false;
  };
  std::string text;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t end = i + 1;
    if (in_image(i)) {
      while (end < ids.size() && in_image(end) && ids[end] == ids[i]) ++end;
      text += tokenizer.decode({ids[i]});
      if (end - i > 1) text += "\u00d7" + std::to_string(end - i);
    } else {
      while (end < ids.size() && !in_image(end)) ++end;
      text += tokenizer.decode(std::vector<std::int64_t>(ids.begin() + static_cast<std::ptrdiff_t>(i),
                                                         ids.begin() + static_cast<std::ptrdiff_t>(end)));
    }
    i = end;
  }
  return text;
}

// The tokens as text, each run of trained or masked tokens decoded on its own (a run ends at a
// message boundary, so no character is split); ids instead of text without a tokenizer.
std::string render(const ft::Sample& s, std::int64_t ignore_index, const ft::Tokenizer* tokenizer, bool colour) {
  std::string out;
  // Images whose tokens stand in the text (Llama 4's tile grids, hundreds of <|patch|> each).
  std::vector<std::pair<std::int64_t, std::int64_t>> image_runs;
  const ft::ImageTransform* transform = tokenizer ? tokenizer->image_transform() : nullptr;
  for (std::size_t k = 0; k < s.images.size(); ++k)
    if (const auto run = in_place_tokens(s, k, transform)) image_runs.push_back(*run);
  for (std::size_t begin = 0; begin < s.tokens.size();) {
    const bool trained = s.labels[begin] != ignore_index;
    std::size_t end = begin + 1;
    while (end < s.tokens.size() && (s.labels[end] != ignore_index) == trained) ++end;
    const std::vector<std::int64_t> ids(s.tokens.begin() + static_cast<std::ptrdiff_t>(begin),
                                        s.tokens.begin() + static_cast<std::ptrdiff_t>(end));
    std::string text;
    if (tokenizer) {
      text = decode_compact(*tokenizer, ids, static_cast<std::int64_t>(begin), image_runs);
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
            << render(s, ignore_index, tokenizer, colour) << "\n";
  const ft::ImageTransform* transform = tokenizer ? tokenizer->image_transform() : nullptr;
  for (std::size_t i = 0; i < s.images.size(); ++i) std::cout << describe_image(s, i, transform) << "\n";
  std::cout << "\n";
}

nlohmann::json sample_json(const char* kind, std::size_t index, const ft::Sample& s,
                           const ft::ImageTransform* transform = nullptr) {
  nlohmann::json j{{kind, index}, {"tokens", s.tokens}, {"labels", s.labels}};
  if (!s.input_pos.empty()) j["input_pos"] = s.input_pos;
  if (!s.seq_lens.empty()) j["seq_lens"] = s.seq_lens;
  if (std::string(kind) == "sample") j["truncated"] = s.truncated;
  if (!s.images.empty()) {
    nlohmann::json images = nlohmann::json::array();
    for (std::size_t k = 0; k < s.images.size(); ++k) {
      const ft::SampleImage& image = s.images[k];
      nlohmann::json seen = nlohmann::json::array();
      for (const auto& [begin, end] : seeing_positions(image)) seen.push_back({begin, end});
      nlohmann::json entry{{"rows", image.rows},
                           {"columns", image.columns},
                           {"tiles", image.tiles.size(0)},
                           {"tile_size", image.tiles.size(-1)},
                           {"thumbnail", has_thumbnail(image)},
                           {"seen_by", seen}};
      // In place (Llama 4): the [begin, end) of its tile grid in the tokens.
      if (const auto run = in_place_tokens(s, k, transform)) entry["tokens"] = {run->first, run->second};
      images.push_back(std::move(entry));
    }
    j["images"] = images;
  }
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

namespace {

// What `fthost data` reports of the whole dataset, whichever way it prints it.
struct DataReport {
  std::size_t samples = 0;
  bool packed = false;
  Totals totals;
  std::vector<std::int64_t> sorted_lengths;
  std::int64_t max_seq_len = 0;
  std::int64_t packs = 0, pack_len = 0, padding = 0;
  std::vector<std::int64_t> batch_shape;  // the first micro-batch; empty for an empty dataset
  double batch_padding = 0;
};

// Samples handed over per batch while scanning: enough that a worker's handover costs nothing
// next to tokenizing them.
constexpr std::int64_t kScanBatch = 64;

// Scans every sample (or packed document), printing the first `shown` as it goes.
Totals scan_samples(const std::shared_ptr<const ft::Dataset>& documents, const ft::Collate* collate, bool packed,
                    std::size_t shown, int workers, const DataViewOptions& options, std::int64_t ignore_index,
                    const ft::Tokenizer* tokenizer, bool colour) {
  const std::size_t size = documents->size();
  Totals totals;
  totals.lengths.reserve(size);
  Progress progress(size);
  // The statistics are of samples; those shown are collated one by one below.
  DataLoader loader(documents, nullptr, in_dataset_order(kScanBatch, workers));
  loader.start_epoch(0);
  LoadedBatch loaded;
  for (std::size_t i = 0; i < size; ++i) {
    if (i % kScanBatch == 0) loaded = loader.next();
    const ft::Sample& sample = loaded.samples.at(i % kScanBatch);
    if (i < shown) {
      // Unpacked samples pass through the recipe's collate; documents of packs cannot (it takes packs).
      const ft::Sample view = packed ? sample : collated(*collate, sample);
      if (options.json)
        std::cout << sample_json("sample", i, view, tokenizer ? tokenizer->image_transform() : nullptr).dump() << "\n";
      else
        print_sample(i, view, ignore_index, tokenizer, colour);
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
  return totals;
}

// The first micro-batch in dataset order (one pack: its mask is pack_len squared).
void describe_first_batch(const std::shared_ptr<const ft::Dataset>& dataset,
                          const std::shared_ptr<const ft::Collate>& collate, std::int64_t batch_size,
                          DataReport& report) {
  if (dataset->size() == 0) return;
  DataLoader loader(dataset, collate, in_dataset_order(report.packed ? 1 : batch_size, 0));
  loader.start_epoch(0);
  const LoadedBatch loaded = loader.next();
  const ft::Batch& batch = loaded.batch;
  std::int64_t real = 0;
  for (const auto& sample : loaded.samples) real += static_cast<std::int64_t>(sample.tokens.size());
  report.batch_shape = batch.tokens.sizes().vec();
  report.batch_padding = static_cast<double>(batch.tokens.numel() - real) / static_cast<double>(batch.tokens.numel());
}

void print_report_json(const DataReport& r) {
  const double tokens = static_cast<double>(r.totals.tokens);
  nlohmann::json stats{{"samples", r.samples},
                       {"tokens", r.totals.tokens},
                       {"trained_tokens", r.totals.trained},
                       {"trained_fraction", tokens > 0 ? static_cast<double>(r.totals.trained) / tokens : 0.0},
                       {"truncated_samples", r.totals.truncated},
                       {"max_seq_len", r.max_seq_len > 0 ? nlohmann::json(r.max_seq_len) : nlohmann::json()},
                       {"packed", r.packed},
                       {"micro_batch_shape", r.batch_shape}};
  const auto& sorted = r.sorted_lengths;
  if (!sorted.empty())
    stats["length"] = {{"min", sorted.front()},
                       {"p50", percentile(sorted, 50)},
                       {"p90", percentile(sorted, 90)},
                       {"p99", percentile(sorted, 99)},
                       {"max", sorted.back()}};
  if (r.packed) {
    stats["packs"] = r.packs;
    stats["pack_len"] = r.pack_len;
    stats["padding_tokens"] = r.padding;
    stats["padding_fraction"] =
        r.packs > 0 ? static_cast<double>(r.padding) / static_cast<double>(r.packs * r.pack_len) : 0;
  }
  std::cout << nlohmann::json{{"stats", stats}}.dump() << "\n";
}

void print_report_text(const DataReport& r, const ft::ConfigNode& root) {
  const auto& sorted = r.sorted_lengths;
  std::cout << "── whole dataset: " << r.samples << " samples" << (r.packed ? " (the documents of the packs)" : "")
            << " ──\n";
  if (!sorted.empty())
    std::cout << fmt::format("tokens per sample  min {}, p50 {}, p90 {}, p99 {}, max {} ({} in all)\n", sorted.front(),
                             percentile(sorted, 50), percentile(sorted, 90), percentile(sorted, 99), sorted.back(),
                             r.totals.tokens);
  std::cout << fmt::format("trained on         {} of {} tokens ({})\n", r.totals.trained, r.totals.tokens,
                           percent(static_cast<double>(r.totals.trained), static_cast<double>(r.totals.tokens)));
  std::cout << fmt::format("truncated          {} samples cut to max_seq_len{}\n", r.totals.truncated,
                           r.max_seq_len > 0 ? " (" + std::to_string(r.max_seq_len) + ")" : "");
  if (r.packed)
    std::cout << fmt::format(
        "packed             {} packs of {} tokens, {} of them padding ({})\n", r.packs, r.pack_len, r.padding,
        percent(static_cast<double>(r.padding), static_cast<double>(r.packs) * static_cast<double>(r.pack_len)));
  if (!r.batch_shape.empty()) {
    std::string shape;
    for (auto d : r.batch_shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    const std::string collate_name = root.table("collate").component();
    if (r.packed)
      std::cout << fmt::format("first micro-batch  {}: the first pack collates to [{}]\n", collate_name, shape);
    else
      std::cout << fmt::format("first micro-batch  {}: the first {} samples collate to [{}], {} of it padding\n",
                               collate_name, r.batch_shape[0], shape, percent(r.batch_padding, 1.0));
  }
}

}  // namespace

std::pair<std::int64_t, std::size_t> longest_training_sample(const ft::Registry& registry, const ft::ConfigNode& root,
                                                             const TrainingSettings& settings) {
  if (!root.is_table("dataset") && !root.is_table_list("dataset"))
    throw ft::ConfigError("--seq-len data: the config names no dataset ([dataset] or [[dataset]])");
  const std::shared_ptr<ft::Tokenizer> tokenizer = build_tokenizer(registry, root);
  const std::shared_ptr<ft::Dataset> dataset = build_dataset(registry, root, tokenizer);
  // Samples or packs as the run trains on them; none shown, so no collate.
  const Totals totals = scan_samples(dataset, nullptr, datasets_packed(root), /*shown=*/0, settings.num_workers,
                                     DataViewOptions{}, ft::kIgnoreIndex, tokenizer.get(), /*colour=*/false);
  const auto longest = std::max_element(totals.lengths.begin(), totals.lengths.end());
  return {longest == totals.lengths.end() ? 0 : *longest, totals.lengths.size()};
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
  DataReport report;
  report.packed = datasets_packed(root);
  // Packs hide where their documents end and the padding begins: the documents come from the
  // same datasets unpacked.
  const std::shared_ptr<ft::Dataset> documents =
      report.packed ? build_dataset(registry, unpacked(root), tokenizer) : dataset;

  const bool colour = !options.json && stdout_takes_colour();
  report.samples = documents->size();
  // How many of `count` samples (or packs) to print.
  auto shown_of = [&](std::size_t count) {
    if (options.samples) return std::min(count, static_cast<std::size_t>(*options.samples));
    return options.json ? count : std::min(count, static_cast<std::size_t>(kSamplesShownAsText));
  };
  if (!options.json) {
    std::cout << (colour ? std::string("Trained-on tokens are ") + kTrainedColour + "green" + kResetColour +
                               ", masked ones (label " + std::to_string(ignore_index) + ", not trained on) " +
                               kMaskedColour + "grey" + kResetColour + ".\n\n"
                         : std::string("Masked tokens (label ") + std::to_string(ignore_index) +
                               ", not trained on) are shown " + kMaskedOpen + "like this" + kMaskedClose +
                               "; the rest is trained on.\n\n");
  }
  report.totals = scan_samples(documents, collate.get(), report.packed, shown_of(report.samples), settings.num_workers,
                               options, ignore_index, tokenizer.get(), colour);

  if (report.packed) {
    report.packs = static_cast<std::int64_t>(dataset->size());
    report.pack_len = report.packs > 0 ? static_cast<std::int64_t>(dataset->get(0).tokens.size()) : 0;
    // Every token of every document is in a pack (whole, or split across packs with
    // split_across_pack); the rest of the packs is padding.
    report.padding = report.packs * report.pack_len - report.totals.tokens;
    if (options.json)
      for (std::size_t p = 0; p < shown_of(static_cast<std::size_t>(report.packs)); ++p)
        std::cout << sample_json("pack", p, dataset->get(p)).dump() << "\n";
  }
  describe_first_batch(dataset, collate, settings.batch_size, report);
  report.sorted_lengths = report.totals.lengths;
  std::sort(report.sorted_lengths.begin(), report.sorted_lengths.end());
  report.max_seq_len = tokenizer ? tokenizer->max_seq_len() : 0;

  if (options.json)
    print_report_json(report);
  else
    print_report_text(report, root);
  return 0;
}

}  // namespace fthost
