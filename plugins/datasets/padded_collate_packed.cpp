// torchtune.data.padded_collate_packed: packs are already max_seq_len long, so tokens, labels
// and input_pos are stacked; seq_lens become the batch's document lengths, with which a token sees
// the earlier tokens of its own document only. torchtune builds the block-causal mask [b, s, s]
// here; fthost's attention takes the lengths instead (the host builds the mask only for a model
// that does not), so a pack costs no s x s booleans.
#include <ft/collate.h>
#include <ft/errors.h>

#include <ATen/ops/empty.h>

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
    auto* tokens = batch.tokens.data_ptr<std::int64_t>();
    auto* labels = batch.labels.data_ptr<std::int64_t>();
    auto* pos = batch.input_pos.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < b; ++i) {
      const auto& x = samples[i];
      std::memcpy(tokens + i * s, x.tokens.data(), s * sizeof(std::int64_t));
      std::memcpy(labels + i * s, x.labels.data(), s * sizeof(std::int64_t));
      std::memcpy(pos + i * s, x.input_pos.data(), s * sizeof(std::int64_t));
      std::int64_t start = 0;
      for (auto len : x.seq_lens) {
        if (len < 0 || start + len > s) throw ft::Error("padded_collate_packed: seq_lens do not fit the pack");
        start += len;
      }
      if (start != s)
        throw ft::Error("padded_collate_packed: seq_lens sum to " + std::to_string(start) + ", the pack has " +
                        std::to_string(s) + " tokens");
      batch.document_lengths.emplace_back(x.seq_lens.begin(), x.seq_lens.end());
    }
    return batch;
  }
};

}  // namespace

namespace ft_ds {

void register_padded_collate_packed(ft::Registry& reg) {
  reg.add<ft::Collate>(
      "torchtune.data.padded_collate_packed", ft::Schema{},
      "stack packs; per-document input_pos, and seq_lens as each row's document lengths (block-causal "
      "attention without an s x s mask)",
      [](const ft::ConfigNode&, ft::Collate::Args) { return std::make_unique<PaddedCollatePacked>(); });
}

}  // namespace ft_ds
