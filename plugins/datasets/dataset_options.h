// Keys every torchtune text dataset shares (source, data_files, split, packed) and what they do.
#pragma once

#include <ft/config.h>
#include <ft/dataset.h>
#include <ft/schema.h>

#include <memory>
#include <string>

namespace ft_ds {

// `default_source` empty: source is required.
void add_source_keys(ft::Schema& schema, const std::string& default_source);
void add_packing_keys(ft::Schema& schema);

// `dataset` as configured: packed into the tokenizer's max_seq_len when packed = true (the
// unpacked dataset is released once packed).
std::unique_ptr<ft::Dataset> maybe_pack(std::unique_ptr<ft::Dataset> dataset, const ft::ConfigNode& cfg,
                                        const ft::Tokenizer& tokenizer, bool split_across_pack);

}  // namespace ft_ds
