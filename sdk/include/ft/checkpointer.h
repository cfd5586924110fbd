// Checkpointer interface (`torchtune.training.FullModelHFCheckpointer`, ...): moves model weights
// between the model's live parameters and checkpoint files. A checkpointer may also store the
// host's training checkpoints (ft/training_checkpoint_storage.h); every fthost run needs that
// role, since it saves a resumable checkpoint at the end of each epoch.
#pragma once

#include <ft/kind.h>
#include <ft/model.h>
#include <ft/training_checkpoint_storage.h>

#include <string>

namespace ft {

class Registry;

class Checkpointer {
 public:
  static constexpr Kind kind = Kind::Checkpointer;
  struct Args {
    std::string output_dir;  // the run's output_dir (the default for the component's own)
    // The registry building the checkpointer (Registry::instantiate sets it): the model families
    // its model_type names.
    const Registry* registry = nullptr;
  };

  virtual ~Checkpointer() = default;
  // Copies the checkpoint's weights into `model` (converting dtype). Returns false when the
  // component has no checkpoint to read (train from the model's random initialisation).
  // Throws ft::Error naming the file and tensor on any mismatch: missing, unexpected, shape.
  virtual bool load_model(Model& model) = 0;
  // Writes the model's weights as `<output_dir>/<tag>/` (e.g. tag "epoch_0") atomically and
  // returns that directory.
  virtual std::string save_model(Model& model, const std::string& tag) = 0;

  // The training-checkpoint role, owned by this checkpointer, or nullptr when it has none. A
  // checkpointer returning one declares TrainingCheckpointStorage::capability when registered.
  virtual TrainingCheckpointStorage* training_checkpoint_storage() { return nullptr; }
};

}  // namespace ft
