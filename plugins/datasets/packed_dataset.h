// torchtune's PackedDataset: the samples of another dataset concatenated in order into packs of
// exactly max_seq_len tokens. Each pack keeps its documents' lengths (seq_lens) and per-document
// positions (input_pos) so padded_collate_packed can build a block-causal mask and RoPE restarts
// per document. Packs are built once, streaming over the source, and stored flat: memory is the
// packed output (three int32 arrays of packs x max_seq_len, plus the lengths).
#pragma once

#include <ft/dataset.h>

#include <cstdint>
#include <vector>

namespace ft_ds {

struct PackOptions {
  std::int64_t max_seq_len = 0;
  std::int64_t padding_idx = 0;    // token id of the padding (torchtune: 0); labels pad with -100
  bool split_across_pack = false;  // false: a sample never straddles two packs (and must fit in one)
  std::int64_t max_packs = 0;      // 0: no limit
};

class PackedDataset final : public ft::Dataset {
 public:
  PackedDataset(const ft::Dataset& source, PackOptions options);
  std::size_t size() const override { return num_packs_; }
  ft::Sample get(std::size_t index) const override;

 private:
  struct Pending;
  void add_pack(const std::vector<std::int64_t>& tokens, const std::vector<std::int64_t>& labels,
                const std::vector<std::int64_t>& input_pos, std::vector<std::int64_t> seq_lens);

  PackOptions options_;
  std::size_t num_packs_ = 0, source_samples_ = 0;
  std::vector<std::int32_t> tokens_, labels_, input_pos_;
  std::vector<std::int32_t> seq_lens_;
  std::vector<std::size_t> seq_lens_start_;  // pack i's lengths: seq_lens_[start[i], start[i + 1])
};

}  // namespace ft_ds
