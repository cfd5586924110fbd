// The recipe's text pipeline built from the run configuration: tokenizer, dataset (a
// ConcatDataset when `[[dataset]]` lists several) and collate. The recipe and `fthost data` both
// build it here, so what `fthost data` shows is what training reads.
#pragma once

#include <ft/collate.h>
#include <ft/config.h>
#include <ft/dataset.h>
#include <ft/registry.h>
#include <ft/tokenizer.h>

#include <cstdint>
#include <memory>

namespace fthost {

// The `[tokenizer]`, or null when the run has none (pre-tokenized data).
std::shared_ptr<ft::Tokenizer> build_tokenizer(const ft::Registry& registry, const ft::ConfigNode& root);

// Every `[key]` / `[[key]]` table (`dataset`, or `dataset_val`), each given `tokenizer` (may be null).
std::shared_ptr<ft::Dataset> build_dataset(const ft::Registry& registry, const ft::ConfigNode& root,
                                           const std::shared_ptr<const ft::Tokenizer>& tokenizer,
                                           const char* key = "dataset");

// The `[collate]` table, padding with the tokenizer's pad id (0 without a tokenizer) and labels
// with the loss's `ignore_index`, to a length that is a multiple of `pad_to_multiple_of` (the
// tensor-parallel degree, `tensor_parallel_dim`, as torchtune's recipe pads).
std::shared_ptr<ft::Collate> build_collate(const ft::Registry& registry, const ft::ConfigNode& root,
                                           const ft::Tokenizer* tokenizer, std::int64_t ignore_index,
                                           std::int64_t pad_to_multiple_of);

}  // namespace fthost
