// The safetensors files of a Hugging Face model directory, as a checkpointer's `checkpoint_dir`
// and `checkpoint_files` name them: listed, written as torchtune's FormattedCheckpointFiles
// (`{filename_format: "model-{}-of-{}.safetensors", max_filename: "00004"}` names the shards
// model-00001-of-00004.safetensors ... model-00004-of-00004.safetensors), or found through the
// directory's model.safetensors.index.json, else its model.safetensors. Without LibTorch: the
// checkpointer and the host's pre-flight check resolve them the same way.
#pragma once

#include <ft/config.h>
#include <ft/export.h>

#include <map>

#include <string>
#include <string_view>
#include <vector>

namespace ft {

inline constexpr const char* kSingleCheckpointFileName = "model.safetensors";
inline constexpr const char* kCheckpointIndexFileName = "model.safetensors.index.json";

// The file names: `filename_format` with exactly two `{}` placeholders (Python's str.format:
// `{0}`/`{1}` and `{{`/`}}` too), filled with i = 1..N zero-padded to max_filename's width, and
// max_filename itself. Throws ft::Error when the format or max_filename is not of that form.
FT_API std::vector<std::string> expand_filename_format(const std::string& filename_format,
                                                       const std::string& max_filename);

// The same from the config table, whose errors name its keys.
FT_API std::vector<std::string> formatted_checkpoint_files(const ft::ConfigNode& table);

// `checkpoint_files` of a checkpointer's table: a list of names or the formatted table.
FT_API std::vector<std::string> listed_checkpoint_files(const ft::ConfigNode& checkpointer, std::string_view key);

struct CheckpointFileList {
  std::vector<std::string> files;                 // paths, in the order listed (an index's: by name)
  std::string index_path;                         // empty unless the files come from an index
  std::map<std::string, std::string> weight_map;  // tensor -> file name, from the index
};

// The files of `dir`: `listed` (names in it), else those its index maps tensors to, else its
// model.safetensors. Throws ft::Error naming the directory, the file and what it holds.
FT_API CheckpointFileList resolve_checkpoint_files(const std::string& dir, const std::vector<std::string>& listed);

}  // namespace ft
