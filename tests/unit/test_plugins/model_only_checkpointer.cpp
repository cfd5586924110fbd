// Checkpointers for the training-checkpoint role checks. None moves real weights:
//   acme.test.ModelOnlyCheckpointer  model I/O only, and says so (no capability): validation refuses it
//   acme.test.StoringCheckpointer    declares and provides the role: validation accepts it
//   acme.test.LyingCheckpointer      declares the role but provides none: the run refuses it
// Each accepts the HF checkpointer's keys, so a config switches to one with a single override.
#include <ft/checkpointer.h>
#include <ft/errors.h>
#include <ft/plugin.h>

namespace {

class ModelOnlyCheckpointer : public ft::Checkpointer {
 public:
  bool load_model(ft::Model&) override { return false; }
  std::string save_model(ft::Model&, const std::string& tag) override { return tag; }
};

class StoringCheckpointer final : public ModelOnlyCheckpointer, private ft::TrainingCheckpointStorage {
 public:
  ft::TrainingCheckpointStorage* training_checkpoint_storage() override { return this; }

 private:
  void write_model_files(const std::vector<ft::NamedTensor>&, const ft::Model&, const std::string&) override {
    throw ft::Error("acme.test.StoringCheckpointer stores nothing");
  }
  void load_model_from(ft::Model&, const std::string&) override {
    throw ft::Error("acme.test.StoringCheckpointer stores nothing");
  }
  void write_tensors(const std::string&, const std::vector<ft::NamedTensor>&,
                     const std::map<std::string, std::string>&) override {
    throw ft::Error("acme.test.StoringCheckpointer stores nothing");
  }
  std::vector<ft::NamedTensor> read_tensors(const std::string&) override {
    throw ft::Error("acme.test.StoringCheckpointer stores nothing");
  }
};

ft::Schema hf_like_schema() {
  ft::Schema s;
  s.optional("checkpoint_dir", ft::ValueType::String, "\"\"", "ignored")
      .optional("model_type", ft::ValueType::String, "\"\"", "ignored")
      .optional("output_dir", ft::ValueType::String, "\"\"", "ignored");
  return s;
}

void register_components(ft::Registry& reg) {
  reg.add<ft::Checkpointer>(
      "acme.test.ModelOnlyCheckpointer", hf_like_schema(), "model weights only",
      [](const ft::ConfigNode&, ft::Checkpointer::Args) { return std::make_unique<ModelOnlyCheckpointer>(); });
  reg.add<ft::Checkpointer>(
      "acme.test.StoringCheckpointer", hf_like_schema(), "declares and provides training-checkpoint storage",
      [](const ft::ConfigNode&, ft::Checkpointer::Args) { return std::make_unique<StoringCheckpointer>(); },
      {ft::TrainingCheckpointStorage::capability});
  reg.add<ft::Checkpointer>(
      "acme.test.LyingCheckpointer", hf_like_schema(), "declares training-checkpoint storage it does not provide",
      [](const ft::ConfigNode&, ft::Checkpointer::Args) { return std::make_unique<ModelOnlyCheckpointer>(); },
      {ft::TrainingCheckpointStorage::capability});
}

}  // namespace
FT_PLUGIN("model_only_checkpointer", "1.0", register_components)
