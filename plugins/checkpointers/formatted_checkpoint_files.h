// torchtune's FormattedCheckpointFiles: `checkpoint_files` written as
// `{filename_format: "model-{}-of-{}.safetensors", max_filename: "00004"}` names the shards
// model-00001-of-00004.safetensors ... model-00004-of-00004.safetensors.
#pragma once

#include <ft/config.h>

#include <string>
#include <vector>

namespace ft_checkpointers {

// The file names: `filename_format` with exactly two `{}` placeholders (Python's str.format:
// `{0}`/`{1}` and `{{`/`}}` too), filled with i = 1..N zero-padded to max_filename's width, and
// max_filename itself. Throws ft::Error when the format or max_filename is not of that form.
std::vector<std::string> expand_filename_format(const std::string& filename_format, const std::string& max_filename);

// The same from the config table, whose errors name its keys.
std::vector<std::string> formatted_checkpoint_files(const ft::ConfigNode& table);

}  // namespace ft_checkpointers
