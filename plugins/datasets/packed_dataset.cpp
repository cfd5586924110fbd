#include "packed_dataset.h"

#include <ft/clock.h>
#include <ft/errors.h>
#include <ft/log.h>

#include <algorithm>
#include <numeric>

namespace ft_ds {

namespace {
template <class T>
std::vector<T> tail(const std::vector<T>& v, std::size_t from) {
  return std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(std::min(from, v.size())), v.end());
}
template <class T>
std::vector<T> head(const std::vector<T>& v, std::size_t to) {
  return std::vector<T>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(to, v.size())));
}
}  // namespace

PackedDataset::PackedDataset(const ft::Dataset& source, PackOptions options) : options_(options) {
  const auto max = options_.max_seq_len;
  if (max <= 0) throw ft::Error("packed = true needs a max_seq_len (set it on the tokenizer)");
  const auto start = ft::Clock::now();
  seq_lens_start_.push_back(0);
  std::vector<std::int64_t> tokens, labels, input_pos, seq_lens;
  std::size_t previous_boundary = 0;
  auto stop = [&] { return options_.max_packs > 0 && num_packs_ >= static_cast<std::size_t>(options_.max_packs); };
  for (std::size_t i = 0; i < source.size() && !stop(); ++i) {
    ft::Sample s = source.get(i);
    ++source_samples_;
    const auto len = static_cast<std::int64_t>(s.tokens.size());
    if (len > max && !options_.split_across_pack)
      throw ft::Error("sample " + std::to_string(i) + " is too long to pack (" + std::to_string(len) +
                      " > max_seq_len " + std::to_string(max) + "); set split_across_pack = true or raise max_seq_len");
    tokens.insert(tokens.end(), s.tokens.begin(), s.tokens.end());
    labels.insert(labels.end(), s.labels.begin(), s.labels.end());
    for (std::int64_t p = 0; p < len; ++p) input_pos.push_back(p % max);
    seq_lens.push_back(len);
    // torchtune's _split_and_add_pack: close full packs, carrying the overflow to the next one.
    while (static_cast<std::int64_t>(tokens.size()) > max && !stop()) {
      std::size_t boundary;
      std::vector<std::int64_t> pack_lens(seq_lens.begin(), seq_lens.end() - 1);
      if (options_.split_across_pack) {
        boundary = static_cast<std::size_t>(max);
        const std::int64_t leftover = max - std::accumulate(pack_lens.begin(), pack_lens.end(), std::int64_t{0});
        if (leftover > 0) pack_lens.push_back(leftover);
      } else {
        boundary = previous_boundary;
      }
      add_pack(head(tokens, boundary), head(labels, boundary), head(input_pos, boundary), std::move(pack_lens));
      const std::int64_t next_len =
          options_.split_across_pack ? static_cast<std::int64_t>(tokens.size() - boundary) : seq_lens.back();
      tokens = tail(tokens, boundary);
      labels = tail(labels, boundary);
      input_pos = tail(input_pos, boundary);
      seq_lens = {next_len};
    }
    previous_boundary = tokens.size();
  }
  if (!tokens.empty() && !stop()) add_pack(tokens, labels, input_pos, seq_lens);
  if (num_packs_ == 0) throw ft::Error("packing produced no packs: the source dataset is empty");
  const double secs = ft::seconds_since(start);
  ft::log::info("packed {} samples into {} packs of {} tokens in {:.2f} s ({:.0f} samples/s)", source_samples_,
                num_packs_, max, secs, secs > 0 ? static_cast<double>(source_samples_) / secs : 0.0);
}

void PackedDataset::add_pack(const std::vector<std::int64_t>& tokens, const std::vector<std::int64_t>& labels,
                             const std::vector<std::int64_t>& input_pos, std::vector<std::int64_t> seq_lens) {
  const auto max = options_.max_seq_len;
  const auto n = static_cast<std::int64_t>(tokens.size());
  const std::int64_t padding = max - n;
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  tokens_.insert(tokens_.end(), static_cast<std::size_t>(padding), static_cast<std::int32_t>(options_.padding_idx));
  labels_.insert(labels_.end(), labels.begin(), labels.end());
  labels_.insert(labels_.end(), static_cast<std::size_t>(padding), static_cast<std::int32_t>(ft::kIgnoreIndex));
  input_pos_.insert(input_pos_.end(), input_pos.begin(), input_pos.end());
  // Padding positions continue after the last real one, clamped to max_seq_len - 1 (torchtune's _pad_pack).
  const std::int64_t last = input_pos.empty() ? -1 : input_pos.back();
  for (std::int64_t k = 1; k <= padding; ++k)
    input_pos_.push_back(static_cast<std::int32_t>(std::min(last + k, max - 1)));
  if (padding > 0) seq_lens.push_back(padding);
  seq_lens_.insert(seq_lens_.end(), seq_lens.begin(), seq_lens.end());
  seq_lens_start_.push_back(seq_lens_.size());
  ++num_packs_;
}

ft::Sample PackedDataset::get(std::size_t index) const {
  if (index >= num_packs_)
    throw ft::Error("pack index " + std::to_string(index) + " out of range (" + std::to_string(num_packs_) + " packs)");
  const auto max = static_cast<std::size_t>(options_.max_seq_len);
  const auto b = static_cast<std::ptrdiff_t>(index * max), e = static_cast<std::ptrdiff_t>((index + 1) * max);
  ft::Sample s;
  s.tokens.assign(tokens_.begin() + b, tokens_.begin() + e);
  s.labels.assign(labels_.begin() + b, labels_.begin() + e);
  s.input_pos.assign(input_pos_.begin() + b, input_pos_.begin() + e);
  s.seq_lens.assign(seq_lens_.begin() + static_cast<std::ptrdiff_t>(seq_lens_start_[index]),
                    seq_lens_.begin() + static_cast<std::ptrdiff_t>(seq_lens_start_[index + 1]));
  return s;
}

}  // namespace ft_ds
