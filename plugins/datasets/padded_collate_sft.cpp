// torchtune.data.padded_collate_sft: right-pads every sample to the longest in the micro-batch
// (rounded up to a multiple of pad_to_multiple_of, the tensor-parallel degree), tokens with
// pad_id and labels with ignore_index.
#include "dataset_components.h"

#include <ft/collate.h>

#include <ATen/ops/full.h>

#include <algorithm>
#include <cstring>

namespace {

class PaddedCollateSft final : public ft::Collate {
 public:
  explicit PaddedCollateSft(ft::Collate::Args args) : args_(args) {}
  ft::Batch collate(const std::vector<ft::Sample>& samples) const override {
    std::size_t longest = 0;
    for (const auto& s : samples) longest = std::max(longest, s.tokens.size());
    const auto multiple = static_cast<std::size_t>(std::max<std::int64_t>(args_.pad_to_multiple_of, 1));
    longest = (longest + multiple - 1) / multiple * multiple;
    const auto b = static_cast<std::int64_t>(samples.size()), len = static_cast<std::int64_t>(longest);
    ft::Batch batch;
    batch.tokens = at::full({b, len}, args_.pad_id, at::kLong);
    batch.labels = at::full({b, len}, args_.ignore_index, at::kLong);
    auto* tokens = batch.tokens.data_ptr<std::int64_t>();
    auto* labels = batch.labels.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < b; ++i) {
      const auto& s = samples[i];
      std::memcpy(tokens + i * len, s.tokens.data(), s.tokens.size() * sizeof(std::int64_t));
      std::memcpy(labels + i * len, s.labels.data(), s.labels.size() * sizeof(std::int64_t));
    }
    return batch;
  }

 private:
  ft::Collate::Args args_;
};

}  // namespace

namespace ft_ds {

void register_padded_collate_sft(ft::Registry& reg) {
  reg.add<ft::Collate>(
      "torchtune.data.padded_collate_sft", ft::Schema{},
      "right-pad to the longest sample: tokens with pad_id, labels with ignore_index",
      [](const ft::ConfigNode&, ft::Collate::Args args) { return std::make_unique<PaddedCollateSft>(args); });
}

}  // namespace ft_ds
