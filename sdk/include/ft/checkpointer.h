// Checkpointer interface (`torchtune.training.FullModelHFCheckpointer`, ...): moves model weights
// between the model's live parameters and checkpoint files.
#pragma once

#include <ft/errors.h>
#include <ft/kind.h>
#include <ft/model.h>

#include <map>
#include <string>
#include <vector>

namespace ft {

class Checkpointer {
 public:
  static constexpr Kind kind = Kind::Checkpointer;
  struct Args {
    std::string output_dir;  // the run's output_dir (the default for the component's own)
  };

  virtual ~Checkpointer() = default;
  // Copies the checkpoint's weights into `model` (converting dtype). Returns false when the
  // component has no checkpoint to read (train from the model's random initialisation).
  // Throws ft::Error naming the file and tensor on any mismatch: missing, unexpected, shape.
  virtual bool load_model(Model& model) = 0;
  // Writes the model's weights as `<output_dir>/<tag>/` (e.g. tag "epoch_0") atomically and
  // returns that directory.
  virtual std::string save_model(Model& model, const std::string& tag) = 0;

  // Training checkpoints (resume) are staged by the host: every rank writes its files into one
  // hidden directory, and rank 0 renames it into place once all are complete. These write
  // into, and read from, such a directory; each file written is fsynced before they return.

  // Writes `tensors` (the model's hf_parameters(), possibly CPU copies of them) into the
  // existing directory `dir` as save_model() lays out a model directory, without the rename.
  virtual void write_model_files(const std::vector<NamedTensor>& tensors, const Model& model, const std::string& dir) {
    (void)tensors, (void)model, (void)dir;
    throw Error("this checkpointer cannot write training checkpoints");
  }
  // Loads the model directory `dir` (as write_model_files wrote it) instead of the configured
  // checkpoint, with load_model()'s checks.
  virtual void load_model_from(Model& model, const std::string& dir) {
    (void)model, (void)dir;
    throw Error("this checkpointer cannot resume from training checkpoints");
  }
  // One tensor file in the checkpoint format (safetensors for the HF checkpointer), written
  // atomically. read_tensors' tensors may be read-only views of the file: copy them.
  // Errors name the file.
  virtual void write_tensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                             const std::map<std::string, std::string>& metadata) {
    (void)path, (void)tensors, (void)metadata;
    throw Error("this checkpointer cannot write training checkpoints");
  }
  virtual std::vector<NamedTensor> read_tensors(const std::string& path) {
    (void)path;
    throw Error("this checkpointer cannot resume from training checkpoints");
  }
};

}  // namespace ft
