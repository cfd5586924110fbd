#include <ft/nn/decoder_model.h>
#include <ft/nn/expert_parallel.h>
#include <ft/nn/load_balancing_loss.h>
#include <ft/nn/mixture_of_experts.h>
#include <ft/nn/parameter_device.h>
#include <ft/nn/tensor_parallel_ops.h>

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/text.h>
#include <ft_kernels/kernel_choice.h>
#include <ft_kernels/row_kernels.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace ft::nn {

std::string hf_dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Half: return "float16";
    default: return "float32";
  }
}

namespace {

// Which fused CPU kernels run (FT_CPU_KERNELS), said once per process; an unknown value of the
// variable fails here, before any training.
void log_cpu_kernels_once() {
  static const bool logged = [] {
    if (ft_kernels::fused_kernels_enabled())
      ft::log::info("cpu kernels: fused, {} (FT_CPU_KERNELS)", ft_kernels::row_kernels().name);
    else
      ft::log::info("cpu kernels: LibTorch's reference operations, no fused kernel (FT_CPU_KERNELS=aten)");
    return true;
  }();
  (void)logged;
}

}  // namespace

DecoderModel::DecoderModel(const BuildDecoder& build, const ft::Model::Args& args, HfLayout layout)
    : dtype_(args.dtype), layout_(layout) {
  const bool shapes_only = args.device.is_meta();
  if (args.device.is_cpu()) log_cpu_kernels_once();
  {
    std::optional<MetaParameters> on_meta;
    if (shapes_only) on_meta.emplace();
    decoder_ = build();
  }
  if (!decoder_) throw ft::Error("model: the family's builder returned no decoder");
  if (!shapes_only) initialize_weights(*decoder_, args.seed);
  // The embedding is a lookup; the output projection (tied or not) is a matmul every position
  // goes through, and so is every linear layer.
  matmul_parameters_ = static_cast<double>(decoder_->options.vocab_size * decoder_->options.embed_dim);
  for (const auto& layer : decoder_->layers) {
    for (const auto& module : layer->modules(/*include_self=*/false))
      if (dynamic_cast<const LinearImpl*>(module.get()))
        for (const auto& p : module->parameters(/*recurse=*/false))
          matmul_parameters_ += static_cast<double>(p.numel());
    // A token multiplies through the k experts it chose, not all of them.
    if (const auto* moe = dynamic_cast<const MixtureOfExpertsImpl*>(layer->mlp.get())) {
      const double per_expert =
          static_cast<double>(moe->experts->w1.numel() + moe->experts->w2.numel() + moe->experts->w3.numel()) /
          static_cast<double>(moe->experts->num_experts());
      matmul_parameters_ += per_expert * static_cast<double>(moe->options().router.top_k);
      has_experts_ = true;
    }
    const AttentionOptions& attention = layer->attn->options();
    attention_width_ += static_cast<double>(attention.num_heads * attention.head_dim);
  }
  decoder_->to(args.device, args.dtype);
}

ft::ModelOutput DecoderModel::forward(const ft::ModelInput& input, const ft::OutputRequest& request) {
  const at::Tensor& tokens = input.tokens;
  const DecoderOptions& cfg = decoder_->options;
  if (tokens.dim() != 2 || tokens.scalar_type() != at::kLong)
    throw ft::Error("model: tokens must be a [batch, seq] int64 tensor");
  if (tokens.size(1) > cfg.max_seq_len)
    throw ft::Error("model: sequence of " + std::to_string(tokens.size(1)) + " tokens exceeds max_seq_len " +
                    std::to_string(cfg.max_seq_len));
  if (tokens.numel() > 0) {
    const std::int64_t lo = tokens.min().item<std::int64_t>(), hi = tokens.max().item<std::int64_t>();
    if (lo < 0 || hi >= cfg.vocab_size)
      throw ft::Error("model: token id " + std::to_string(lo < 0 ? lo : hi) + " is outside the vocabulary [0, " +
                      std::to_string(cfg.vocab_size) + ")");
  }
  if (context_parallel_ && caches_set_up_)
    throw ft::Error("model: generation (the KV cache) does not run split across ranks (context parallelism)");
  if (context_parallel_ && !input.input_pos.defined())
    throw ft::Error(
        "model: under context parallelism forward needs input_pos (the global indices of this rank's "
        "positions)");
  if (caches_set_up_ && !input.input_pos.defined())
    throw ft::Error("model: with the KV cache set up, forward needs input_pos (where the tokens sit in the sequence)");
  if (caches_set_up_ && input.mask.defined())
    throw ft::Error("model: with the KV cache set up, attention is causal over the cached positions; pass no mask");
  at::Tensor positions = input.input_pos.defined() ? input.input_pos : at::arange(tokens.size(1), tokens.options());
  if (!input.document_lengths.empty() && input.mask.defined())
    throw ft::Error("model: packed documents (document_lengths) take no mask");
  at::Tensor hidden = decoder_->hidden(tokens, positions, input.mask, input.document_lengths);
  ft::ModelOutput out;
  if (has_experts_) collect_routing(out);
  if (tensor_parallel_ && tensor_parallel_->output_vocab_shard) {
    // Loss parallel: the logits (or the loss's own projection) cover this rank's vocabulary slice.
    out.vocab_shard = tensor_parallel_->output_vocab_shard;
    hidden = colwise_parallel_input(hidden, tensor_parallel_->group);
  }
  if (request.hidden_only) {
    out.hidden = hidden;
    out.final_logit_softcap = cfg.final_logit_softcap;
    return out;
  }
  const at::Tensor& weight = decoder_->output_weight();
  // One matmul over every position, handed out as sequence-chunk views. Projecting chunk by chunk
  // (torchtune's loop) holds the same logits at once, but its backward produced one [vocab, dim]
  // weight gradient per chunk and summed them: num_output_chunks extra passes over the largest
  // matrix, and matmuls of a chunk's few rows each.
  at::Tensor logits = at::linear(hidden, weight);
  logits = ft::soft_cap(logits, cfg.final_logit_softcap);
  const int chunks = std::max(1, request.num_output_chunks);
  out.logits = chunks == 1 ? std::vector<at::Tensor>{logits} : logits.chunk(chunks, 1);
  return out;
}

void DecoderModel::collect_routing(ft::ModelOutput& out) const {
  std::vector<at::Tensor> loads, logits;
  std::int64_t num_experts = 0, top_k = 0;
  bool checkpointed_router = false;
  int replicas = 1;  // tensor parallelism: every rank of the group computes the same loss
  for (std::size_t i = 0; i < decoder_->layers.size(); ++i) {
    const auto* moe = dynamic_cast<const MixtureOfExpertsImpl*>(decoder_->layers[i]->mlp.get());
    if (!moe) continue;
    checkpointed_router |= i < decoder_->checkpointed_layers.size() && decoder_->checkpointed_layers[i];
    loads.push_back(moe->last_expert_load);
    logits.push_back(moe->last_router_logits);
    num_experts = moe->options().router.num_experts;
    top_k = moe->options().router.top_k;
    if (moe->split_over) replicas = moe->split_over->size();
  }
  out.expert_load = at::stack(loads);
  const double coefficient = decoder_->options.router_aux_loss_coef;
  if (coefficient != 0 && at::GradMode::is_enabled()) {
    // Checkpointed layers ran without a graph: their router logits could carry no gradient.
    if (checkpointed_router)
      throw ft::Error(
          "model: the router's load-balancing loss (output_router_logits) cannot be trained with activation "
          "checkpointing yet; set enable_activation_checkpointing = false or drop output_router_logits");
    const at::Tensor loss = load_balancing_loss(logits, num_experts, top_k) * coefficient;
    // Its value as computed; its gradient shared among the replicas, since the router's gradient
    // is summed over them.
    out.auxiliary_loss = replicas == 1 ? loss : loss.detach() + (loss - loss.detach()) / replicas;
  }
}

void* DecoderModel::find_role(ft::ModelRole role) {
  switch (role) {
    case ft::ModelRole::Sharding: return static_cast<ft::ModelSharding*>(this);
    case ft::ModelRole::LayerCheckpointing: return static_cast<ft::ModelLayerCheckpointing*>(this);
    case ft::ModelRole::TensorParallelism: return static_cast<ft::ModelTensorParallelism*>(this);
    case ft::ModelRole::KvCache: return static_cast<ft::ModelKvCache*>(this);
    case ft::ModelRole::ExpertParallelism: return static_cast<ft::ModelExpertParallelism*>(this);
    case ft::ModelRole::ContextParallelism: return static_cast<ft::ModelContextParallelism*>(this);
  }
  return nullptr;
}

std::string DecoderModel::context_parallel_problem() const {
  // The load-balancing loss is a product of two averages over the whole batch's tokens, which
  // no rank holds; computed per rank it would be another loss.
  if (has_experts_ && decoder_->options.router_aux_loss_coef != 0)
    return "the router's load-balancing loss (output_router_logits) is computed over every token of the batch, "
           "which no rank holds under context parallelism";
  return "";
}

void DecoderModel::apply_context_parallel(const std::shared_ptr<ft::Collectives>& group, ft::RotateMethod rotate) {
  if (context_parallel_) throw ft::Error("context parallelism is already applied to this model");
  if (std::string problem = context_parallel_problem(); !problem.empty()) throw ft::Error(problem);
  const auto context = std::make_shared<const ContextParallel>(ContextParallel{group, rotate});
  for (auto& layer : decoder_->layers) layer->attn->context_parallel = context;
  context_parallel_ = true;
}

void DecoderModel::setup_caches(std::int64_t batch_size, std::int64_t max_seq_len) {
  const DecoderOptions& cfg = decoder_->options;
  if (max_seq_len > cfg.max_seq_len)
    throw ft::Error("model: a KV cache of " + std::to_string(max_seq_len) + " positions exceeds max_seq_len " +
                    std::to_string(cfg.max_seq_len));
  for (auto& layer : decoder_->layers) layer->attn->kv_cache = std::make_shared<KVCache>(batch_size, max_seq_len);
  caches_set_up_ = true;
}

void DecoderModel::reset_caches() {
  for (auto& layer : decoder_->layers)
    if (layer->attn->kv_cache) layer->attn->kv_cache->reset();
}

void DecoderModel::remove_caches() {
  for (auto& layer : decoder_->layers) layer->attn->kv_cache.reset();
  caches_set_up_ = false;
}

std::vector<ft::ShardingUnit> DecoderModel::sharding_units() {
  std::vector<ft::ShardingUnit> units;
  for (std::size_t i = 0; i < decoder_->layers.size(); ++i)
    units.push_back({"layers." + std::to_string(i), decoder_->layers[i]->parameters()});
  decoder_->embedding_unit.reset();
  decoder_->output_unit.reset();
  const bool tied = decoder_->options.tie_word_embeddings;
  if (separate_embedding_) {
    // The lookup's backward needs only the indices; a tied embedding is also the output
    // projection, used (and needed in backward) after the layers.
    ft::ShardingUnit unit{"tok_embeddings", {decoder_->tok_embeddings}};
    unit.backward_needs_parameters = false;
    unit.used_after_layers = tied;
    decoder_->embedding_unit = units.size();
    if (tied) decoder_->output_unit = units.size();
    units.push_back(std::move(unit));
  }
  if (separate_output_ && !tied) {
    ft::ShardingUnit unit{"output", {decoder_->output}};
    unit.used_after_layers = true;
    decoder_->output_unit = units.size();
    units.push_back(std::move(unit));
  }
  return units;
}

void DecoderModel::set_activation_checkpointing(const std::vector<bool>& layers) {
  if (layers.size() != decoder_->layers.size())
    throw ft::Error("activation checkpointing: " + std::to_string(layers.size()) + " layer flags for a model of " +
                    std::to_string(decoder_->layers.size()) + " layers");
  if (decoder_->options.router_aux_loss_coef != 0)
    for (std::size_t i = 0; i < layers.size(); ++i)
      if (layers[i] && dynamic_cast<const MixtureOfExpertsImpl*>(decoder_->layers[i]->mlp.get()))
        throw ft::Error("activation checkpointing of layer " + std::to_string(i) +
                        ", a mixture of experts, would lose the gradient of the router's load-balancing loss "
                        "(output_router_logits in config.json); set enable_activation_checkpointing = false, or "
                        "output_router_logits to false");
  decoder_->checkpointed_layers = layers;
}

std::vector<std::string> DecoderModel::shard_separately(const std::vector<std::string>& module_names) {
  std::vector<std::string> notes, unknown;
  const std::int64_t layers = static_cast<std::int64_t>(decoder_->layers.size());
  for (const std::string& name : module_names) {
    if (name == "tok_embeddings") {
      separate_embedding_ = true;
    } else if (name == "output" && decoder_->options.tie_word_embeddings) {
      // torchtune's tied output projection is no module of its own, so the name matches nothing.
      notes.push_back(
          "\"output\" is tied to tok_embeddings and has no module of its own: it is sharded with " +
          std::string(separate_embedding_ || std::count(module_names.begin(), module_names.end(), "tok_embeddings")
                          ? "the tok_embeddings unit"
                          : "the root unit"));
    } else if (name == "output") {
      separate_output_ = true;
    } else if (name.rfind("layers.", 0) == 0 && name.size() > 7 && name.size() < 16 &&
               name.find_first_not_of("0123456789", 7) == std::string::npos && std::stoll(name.substr(7)) < layers) {
      notes.push_back("\"" + name + "\" is a sharding unit already");
    } else {
      unknown.push_back(name);
    }
  }
  if (!unknown.empty()) {
    std::string list;
    for (const auto& name : unknown) list += (list.empty() ? "\"" : ", \"") + name + "\"";
    throw ft::Error(list + (unknown.size() == 1 ? " names" : " name") +
                    " no module this model can shard separately; it offers \"tok_embeddings\"" +
                    (decoder_->options.tie_word_embeddings ? std::string(" (\"output\" is tied to it)")
                                                           : std::string(", \"output\"")) +
                    " and \"layers.0\" .. \"layers." + std::to_string(layers - 1) + "\"");
  }
  return notes;
}

void DecoderModel::apply_tensor_parallel(const std::vector<ft::ModuleParallelism>& plan,
                                         const std::shared_ptr<ft::Collectives>& group) {
  if (tensor_parallel_) throw ft::Error("tensor parallelism is already applied to this model");
  tensor_parallel_ = split_decoder(*decoder_, plan, group);
}

std::vector<at::Tensor> DecoderModel::tensor_parallel_shards() {
  std::vector<at::Tensor> shards;
  if (tensor_parallel_)
    for (const auto& split : tensor_parallel_->parameters) shards.push_back(split.parameter);
  return shards;
}

void DecoderModel::with_full_tensor_parallel_parameters(const std::function<void()>& fn) {
  if (!tensor_parallel_) return fn();
  with_whole_parameters(*tensor_parallel_, fn);
}

std::int64_t DecoderModel::experts_per_layer() const {
  for (const auto& layer : decoder_->layers)
    if (const auto* moe = dynamic_cast<const MixtureOfExpertsImpl*>(layer->mlp.get()))
      return moe->options().router.num_experts;
  return 0;
}

void DecoderModel::apply_expert_parallel(const std::shared_ptr<ft::Collectives>& group) {
  if (expert_parallel_) throw ft::Error("expert parallelism is already applied to this model");
  expert_parallel_ = split_experts(*decoder_, group);
}

std::shared_ptr<ft::Collectives> DecoderModel::expert_parallel_group() const {
  return expert_parallel_ ? expert_parallel_->group : nullptr;
}

std::vector<at::Tensor> DecoderModel::expert_parallel_shards() {
  std::vector<at::Tensor> shards;
  if (expert_parallel_)
    for (const auto& split : expert_parallel_->parameters) shards.push_back(split.parameter);
  return shards;
}

void DecoderModel::with_full_expert_parallel_parameters(const std::function<void()>& fn) {
  if (!expert_parallel_) return fn();
  with_whole_parameters(*expert_parallel_, fn);
}

bool DecoderModel::ignorable_hf_name(const std::string& name) const {
  // A tied model's checkpoint may still carry the (identical) lm_head copy; HF also used to
  // store the rotary inverse frequencies, which are recomputed from the config.
  if (decoder_->options.tie_word_embeddings && name == layout_.lm_head) return true;
  return ft::ends_with(name, ".rotary_emb.inv_freq");
}

// From the whole model as built, not the modules now: under tensor parallelism a rank holds
// slices, but the FLOPs are those of the whole model.
double DecoderModel::training_flops_per_position(std::int64_t seq_len) const {
  return 6 * matmul_parameters_ + 12 * attention_width_ * static_cast<double>(seq_len);
}

}  // namespace ft::nn
