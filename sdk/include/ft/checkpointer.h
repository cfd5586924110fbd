// Checkpointer interface (`torchtune.training.FullModelHFCheckpointer`, ...): moves model weights
// between the model's live parameters and checkpoint files.
#pragma once

#include <ft/kind.h>
#include <ft/model.h>

#include <string>

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
};

}  // namespace ft
