// The training-checkpoint role a checkpointer may provide besides moving model weights: the
// files of a resumable checkpoint, which the host stages (docs/checkpointing.md).
//
// Every rank writes its files into one hidden directory, and rank 0 renames it into place once
// all are complete. These functions write into, and read from, such a directory; each file
// written is synced before they return. A checkpointer provides the role by returning this
// interface from Checkpointer::training_checkpoint_storage() and declaring `capability` when
// it registers, so `fthost validate` knows without constructing it.
#pragma once

#include <ft/model.h>

#include <map>
#include <string>
#include <vector>

namespace ft {

class TrainingCheckpointStorage {
 public:
  // Registry capability (Registry::add's last argument) of a checkpointer providing this role.
  static constexpr const char* capability = "training_checkpoints";

  virtual ~TrainingCheckpointStorage() = default;

  // Writes `tensors` (the model's hf_parameters(), possibly CPU copies of them) into the
  // existing directory `dir`, laid out as the checkpointer lays out a saved model.
  virtual void write_model_files(const std::vector<NamedTensor>& tensors, const Model& model,
                                 const std::string& dir) = 0;
  // Loads the model directory `dir` (as write_model_files wrote it) instead of the configured
  // checkpoint, with the checks of Checkpointer::load_model().
  virtual void load_model_from(Model& model, const std::string& dir) = 0;

  // One tensor file in the checkpoint format (safetensors for the HF checkpointer), written
  // atomically. read_tensors' tensors may be read-only views of the file: copy them.
  // Errors name the file.
  virtual void write_tensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                             const std::map<std::string, std::string>& metadata) = 0;
  virtual std::vector<NamedTensor> read_tensors(const std::string& path) = 0;
};

}  // namespace ft
