// What the command line asked for: the command, the config file and its overrides, the plugin
// directories, and each command's options. Parsed by the CLI (command_line.h), read by config
// loading and by the training library, so it lives below both.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fthost {

// The options of `fthost data`.
struct DataViewOptions {
  std::optional<std::int64_t> samples;  // unset: a few in text, all with --json
  bool packed = false;                  // --packed: every dataset packs, as with dataset.packed = true
  bool json = false;
};

// The options of `fthost plan` (docs/plan.md).
struct PlanOptions {
  int nproc_per_node = 1;
  int nnodes = 1;
  std::string device;                        // --device: a datasheet's name ("h100")
  std::optional<double> device_memory;       // --device-memory, bytes
  std::optional<std::int64_t> seq_len;       // --seq-len N: unset, the longest the config admits
  bool seq_len_from_data = false;            // --seq-len data: the longest sample of the dataset
  std::string seq_len_source = "--seq-len";  // where seq_len came from, for the output
  // A model that reads images: --images-per-sample (unset: 1) and --tiles-per-image (unset: the
  // tokenizer's max_num_tiles, else the model's).
  std::optional<std::int64_t> images_per_sample;
  std::optional<std::int64_t> tiles_per_image;
  double mfu = 0.4;                    // --mfu: the share of the peak the step time assumes
  double inter_node_bandwidth = 50e9;  // --inter-node-bandwidth, bytes/s per GPU
  double write_bandwidth = 1e9;        // --write-bandwidth, bytes/s to the checkpoint's disk
};

struct Invocation {
  std::string command = "run";
  std::string config_path;
  std::vector<std::string> plugin_dirs;
  std::vector<std::string> args;  // overrides, the KIND filter of `ls`, or cp's SOURCE DEST
  bool verbose = false;
  DataViewOptions data;
  PlanOptions plan;
  bool force = false;          // cp: overwrite the destination
  bool make_parents = false;   // cp: create the destination's directories
  bool strict = false;         // validate: missing or unreadable files are errors
  std::string write_manifest;  // plugins --write-manifest LIB: the library whose manifest to write
};

// run, data and plan: the commands that train or read data, and so need LibTorch (training_library.h).
bool is_training_command(const Invocation& inv);

// Errors in the command line's combination of options, before anything is loaded.
void check_invocation(const Invocation& inv);

}  // namespace fthost
