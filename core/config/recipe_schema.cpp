#include "config/recipe_schema.h"

namespace fthost {

using ft::ValueType;

const ft::Schema& recipe_schema() {
  static const ft::Schema schema = [] {
    ft::Schema s;
    s.optional("output_dir", ValueType::String, "\"output\"",
               "directory for logs, checkpoints and the effective config")
        .optional("seed", ValueType::Int, "",
                  "random seed: initialisation and the sampler's shuffle (unset or null: drawn at random and logged)")
        .optional("epochs", ValueType::Int, "1", "number of epochs")
        .optional("max_steps_per_epoch", ValueType::Int, "", "stop an epoch after this many optimizer steps")
        .optional("batch_size", ValueType::Int, "4", "samples per micro-batch and rank")
        .optional("gradient_accumulation_steps", ValueType::Int, "1", "micro-batches per optimizer step")
        .optional("clip_grad_norm", ValueType::Any, "",
                  "clip the total gradient L2 norm to this (\"inf\": log it only)")
        .optional("shuffle", ValueType::Bool, "true", "shuffle samples each epoch")
        .optional("device", ValueType::String, "\"cpu\"", "cpu, cuda or cuda:N")
        .optional("dtype", ValueType::String, "\"fp32\"", "fp32 or bf16")
        .optional("log_every_n_steps", ValueType::Int, "1", "log metrics every N optimizer steps")
        .optional("log_peak_memory_stats", ValueType::Bool, "false",
                  "log peak memory (CUDA allocator, or process RSS on CPU)")
        .optional("resume_from_checkpoint", ValueType::Any, "false",
                  "true: resume from the newest complete checkpoint in output_dir; or a checkpoint directory's path")
        .optional("save_every_n_steps", ValueType::Int, "0",
                  "also checkpoint every N optimizer steps as step_N (0: each epoch only)")
        .optional("keep_last_n", ValueType::Int, "0", "keep only the newest N complete checkpoints (0: all)")
        .optional("num_threads", ValueType::Int, "0", "intra-op and BLAS threads (0: all cores of this rank)")
        .optional("num_workers", ValueType::Int, "0",
                  "background threads that tokenize and collate the training step's micro-batches ahead of it "
                  "(0: the step makes its own)")
        .optional("collate_fn", ValueType::String, "", "torchtune spelling of the [collate] component")
        .optional("optimizer_in_bwd", ValueType::Bool, "false",
                  "step each parameter in backward as soon as its gradient is final, then free the gradient")
        .optional("enable_activation_checkpointing", ValueType::Bool, "false",
                  "every transformer layer keeps only its input and recomputes its activations in backward")
        .optional("ac_mode", ValueType::String, "",
                  "with enable_activation_checkpointing = false: \"full\" (every layer), \"selective\" "
                  "(the layers ac_option chooses) or \"none\"")
        .optional("ac_option", ValueType::Any, "",
                  "ac_mode = \"selective\": integer k checkpoints every k-th layer (0: every layer); "
                  "\"op\" is not supported")
        .optional(
            "enable_activation_offloading", ValueType::Bool, "false",
            "CUDA, with enable_activation_checkpointing: the checkpointed layers' inputs wait in pinned host memory")
        .optional("enable_async_checkpointing", ValueType::Bool, "false",
                  "write checkpoints in a background thread once their tensors are copied")
        .optional("compile", ValueType::Bool, "false",
                  "torch.compile: LibTorch runs eagerly, so true warns and trains as torchtune's eager run")
        .optional("fsdp_cpu_offload", ValueType::Bool, "",
                  "FSDP on an accelerator: shards, gradients, optimizer step in CPU memory (no effect on CPU); "
                  "unset: false. Moved into [parallelism] as cpu_offload")
        .optional("fsdp_reshard_after_forward", ValueType::Bool, "",
                  "FSDP: free gathered parameters after forward; unset: true. Moved into [parallelism] as "
                  "reshard_after_forward")
        .optional("custom_sharded_layers", ValueType::List, "",
                  "FSDP: modules sharded as units of their own (tok_embeddings, output)")
        .optional("data_parallel_shard_dim", ValueType::Int, "",
                  "ranks a parameter is sharded over (-1, or unset: all); moved into [parallelism]")
        .optional("data_parallel_replicate_dim", ValueType::Int, "",
                  "replica groups (HSDP; unset: 1); moved into [parallelism]")
        .optional("tensor_parallel_dim", ValueType::Int, "1",
                  "ranks per tensor-parallel group (1: none); > 1 needs [tensor_parallel_plan]")
        .optional("expert_parallel_dim", ValueType::Int, "1",
                  "data-parallel ranks a mixture of experts' experts are split over (1: every rank holds every "
                  "expert); tokens reach their experts' ranks by all-to-all")
        .optional("context_parallel_dim", ValueType::Int, "1",
                  "ranks each sequence is split across (1: none): attention runs as ring attention over them, "
                  "each holding 2 of 2 x context_parallel_dim load-balanced chunks")
        .optional("context_parallel_rotate_method", ValueType::String, "\"allgather\"",
                  "how keys and values travel between the context-parallel ranks: \"allgather\" (every rank's at "
                  "once) or \"alltoall\" (round the ring, one rank's at a time)")
        .optional("preemption_signals", ValueType::List, "[\"SIGTERM\", \"SIGINT\", \"SIGUSR1\"]",
                  "signals that stop the run at the next optimizer step, after saving that step (exit status 75); "
                  "[]: none")
        .optional("preemption_grace_s", ValueType::Int, "",
                  "seconds after the first stop signal by which the run ends itself, saved or not (unset: no "
                  "limit of its own)")
        .optional("distributed_timeout_s", ValueType::Float, "300",
                  "a collective not finished after this long fails the run on every rank")
        .optional("log_level", ValueType::String, "",
                  "how much the run logs: DEBUG, INFO (unset), WARNING, ERROR or CRITICAL (any case)")
        .optional("dataset_val", ValueType::Any, "",
                  "validation set: a dataset component table, or a list of them ([[dataset_val]])")
        .optional("batch_size_val", ValueType::Int, "", "samples per validation batch and rank (unset: batch_size)")
        .optional("run_val_every_n_steps", ValueType::Int, "",
                  "validate on dataset_val after every N optimizer steps (unset: never)")
        .optional("plugins", ValueType::Table, "", "plugin search: paths = [\"dir\", \"lib.so\"]")
        .path("output_dir", ft::PathRole::OutputDirectory);
    for (ft::Kind k : ft::all_kinds()) {
      // Several datasets are concatenated and several loggers all receive the metrics.
      const bool listable = k == ft::Kind::Dataset || k == ft::Kind::MetricLogger;
      s.optional(std::string(ft::kind_name(k)), listable ? ValueType::Any : ValueType::Table, "",
                 listable ? "component table with _component_, or a list of them ([[...]])"
                          : "component table with _component_");
    }
    return s;
  }();
  return schema;
}

std::optional<ft::Kind> kind_of_table(const std::string& key) {
  if (key == "dataset_val") return ft::Kind::Dataset;  // the validation set
  return ft::kind_from_name(key);
}

}  // namespace fthost
