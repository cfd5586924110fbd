#include "recipe_schema.h"

namespace fthost {

using ft::ValueType;

const ft::Schema& recipe_schema() {
  static const ft::Schema schema = [] {
    ft::Schema s;
    s.optional("output_dir", ValueType::String, "\"output\"", "directory for logs, checkpoints and the effective config")
        .optional("seed", ValueType::Int, "0", "random seed for initialisation and data order")
        .optional("epochs", ValueType::Int, "1", "number of epochs")
        .optional("max_steps_per_epoch", ValueType::Int, "", "stop an epoch after this many optimizer steps")
        .optional("batch_size", ValueType::Int, "4", "samples per micro-batch and rank")
        .optional("gradient_accumulation_steps", ValueType::Int, "1", "micro-batches per optimizer step")
        .optional("clip_grad_norm", ValueType::Float, "", "clip the total gradient L2 norm to this value")
        .optional("shuffle", ValueType::Bool, "true", "shuffle samples each epoch")
        .optional("device", ValueType::String, "\"cpu\"", "cpu or cuda")
        .optional("dtype", ValueType::String, "\"fp32\"", "fp32 or bf16")
        .optional("log_every_n_steps", ValueType::Int, "1", "log metrics every N optimizer steps")
        .optional("log_peak_memory_stats", ValueType::Bool, "false", "log peak memory (cuda only)")
        .optional("resume_from_checkpoint", ValueType::Bool, "false", "resume from the newest checkpoint")
        .optional("num_threads", ValueType::Int, "0", "intra-op threads (0: all cores of this rank)")
        .optional("plugins", ValueType::Table, "", "plugin search: paths = [\"dir\", \"lib.so\"]");
    for (ft::Kind k : ft::all_kinds())
      s.optional(std::string(ft::kind_name(k)), ValueType::Table, "", "component table with _component_");
    return s;
  }();
  return schema;
}

std::optional<ft::Kind> kind_of_table(const std::string& key) { return ft::kind_from_name(key); }

}  // namespace fthost
