// torchtune.data.padded_collate_packed: packs are already max_seq_len long, so tokens, labels
// and input_pos are stacked; seq_lens become a block-causal mask [b, s, s] (true = may attend):
// a token sees the earlier tokens of its own document only.
#include <ft/collate.h>
#include <ft/errors.h>

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <cstring>

#include "dataset_components.h"

namespace {

class PaddedCollatePacked final : public ft::Collate {
 public:
  ft::Batch collate(const std::vector<ft::Sample>& samples) const override {
    if (samples.empty()) throw ft::Error("padded_collate_packed: empty micro-batch");
    const auto b = static_cast<std::int64_t>(samples.size());
    const auto s = static_cast<std::int64_t>(samples[0].tokens.size());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const auto& x = samples[i];
      if (x.seq_lens.empty() || x.input_pos.size() != x.tokens.size())
        throw ft::Error(
            "padded_collate_packed needs packed samples: set packed = true on the dataset "
            "(or use collate_fn = \"torchtune.data.padded_collate_sft\")");
      if (static_cast<std::int64_t>(x.tokens.size()) != s)
        throw ft::Error("padded_collate_packed: packs of different lengths (" + std::to_string(x.tokens.size()) +
                        " and " + std::to_string(s) + ")");
    }
    ft::Batch batch;
    batch.tokens = at::empty({b, s}, at::kLong);
    batch.labels = at::empty({b, s}, at::kLong);
    batch.input_pos = at::empty({b, s}, at::kLong);
    batch.mask = at::zeros({b, s, s}, at::kBool);
    auto* tokens = batch.tokens.data_ptr<std::int64_t>();
    auto* labels = batch.labels.data_ptr<std::int64_t>();
    auto* pos = batch.input_pos.data_ptr<std::int64_t>();
    auto* mask = batch.mask.data_ptr<bool>();
    for (std::int64_t i = 0; i < b; ++i) {
      const auto& x = samples[i];
      std::memcpy(tokens + i * s, x.tokens.data(), s * sizeof(std::int64_t));
      std::memcpy(labels + i * s, x.labels.data(), s * sizeof(std::int64_t));
      std::memcpy(pos + i * s, x.input_pos.data(), s * sizeof(std::int64_t));
      std::int64_t start = 0;
      for (auto len : x.seq_lens) {
        if (len < 0 || start + len > s) throw ft::Error("padded_collate_packed: seq_lens do not fit the pack");
        for (std::int64_t r = start; r < start + len; ++r)
          std::memset(mask + (i * s + r) * s + start, 1, r - start + 1);
        start += len;
      }
      if (start != s)
        throw ft::Error("padded_collate_packed: seq_lens sum to " + std::to_string(start) + ", the pack has " +
                        std::to_string(s) + " tokens");
    }
    return batch;
  }
};

}  // namespace

namespace ft_ds {

void register_padded_collate_packed(ft::Registry& reg) {
  reg.add<ft::Collate>(
      "torchtune.data.padded_collate_packed", ft::Schema{},
      "stack packs; block-causal mask from seq_lens and per-document input_pos",
      [](const ft::ConfigNode&, ft::Collate::Args) { return std::make_unique<PaddedCollatePacked>(); });
}

}  // namespace ft_ds
