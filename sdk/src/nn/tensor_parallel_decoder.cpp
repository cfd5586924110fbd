#include <ft/nn/tensor_parallel_decoder.h>

#include <ft/errors.h>
#include <ft/nn/feed_forward.h>
#include <ft/nn/mixture_of_experts.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <map>
#include <string>
#include <utility>

namespace ft::nn {

namespace {

using ft::ParallelStyle;

// What a module of the decoder is, for the styles it accepts.
enum class Role {
  Embedding,
  Output,
  Norm,
  Attention,
  Mlp,
  ColwiseLinear,
  RowwiseLinear,
  Container,
  Replicated,
  Router,
  Experts
};

struct Module {
  std::string path;
  Role role;
};

std::vector<Module> decoder_modules(const TransformerDecoderImpl& decoder) {
  std::vector<Module> modules{{"tok_embeddings", Role::Embedding}, {"layers", Role::Container}};
  for (std::size_t i = 0; i < decoder.layers.size(); ++i) {
    const std::string p = "layers." + std::to_string(i);
    modules.push_back({p, Role::Container});
    modules.push_back({p + ".sa_norm", Role::Norm});
    modules.push_back({p + ".attn", Role::Attention});
    // Per-head q/k norms see only local heads once attention is split: whole on every rank.
    if (decoder.layers[i]->attn->q_norm) {
      modules.push_back({p + ".attn.q_norm", Role::Replicated});
      modules.push_back({p + ".attn.k_norm", Role::Replicated});
    }
    if (decoder.layers[i]->sa_scale) modules.push_back({p + ".sa_scale", Role::Norm});
    if (decoder.layers[i]->mlp_scale) modules.push_back({p + ".mlp_scale", Role::Norm});
    for (const char* name : {"q_proj", "k_proj", "v_proj"})
      modules.push_back({p + ".attn." + name, Role::ColwiseLinear});
    modules.push_back({p + ".attn.output_proj", Role::RowwiseLinear});
    modules.push_back({p + ".mlp_norm", Role::Norm});
    modules.push_back({p + ".mlp", Role::Mlp});
    if (const auto* moe = dynamic_cast<const MixtureOfExpertsImpl*>(decoder.layers[i]->mlp.get())) {
      modules.push_back({p + ".mlp.router", Role::Container});
      modules.push_back({p + ".mlp.router.gate", Role::Router});
      modules.push_back({p + ".mlp.experts", Role::Experts});
      if (moe->shared_expert) {
        modules.push_back({p + ".mlp.shared_expert", Role::Container});
        modules.push_back({p + ".mlp.shared_expert.w1", Role::ColwiseLinear});
        modules.push_back({p + ".mlp.shared_expert.w2", Role::RowwiseLinear});
        modules.push_back({p + ".mlp.shared_expert.w3", Role::ColwiseLinear});
      }
      continue;
    }
    modules.push_back({p + ".mlp.w1", Role::ColwiseLinear});
    modules.push_back({p + ".mlp.w2", Role::RowwiseLinear});
    modules.push_back({p + ".mlp.w3", Role::ColwiseLinear});
  }
  modules.push_back({"norm", Role::Norm});
  // A tied output projection is the embedding matrix; the plan may still name it "output".
  modules.push_back({"output", Role::Output});
  return modules;
}

std::optional<ParallelStyle> accepted_style(Role role) {
  switch (role) {
    case Role::Embedding:
    case Role::RowwiseLinear: return ParallelStyle::Rowwise;
    case Role::Output:
    case Role::ColwiseLinear: return ParallelStyle::Colwise;
    case Role::Norm: return ParallelStyle::SequenceParallel;
    case Role::Attention:
    case Role::Mlp: return ParallelStyle::PrepareModuleInput;
    case Role::Router: return ParallelStyle::NoParallel;
    case Role::Experts: return ParallelStyle::ExpertTensorParallel;
    case Role::Container:
    case Role::Replicated: return std::nullopt;
  }
  return std::nullopt;
}

constexpr const char* kLayout =
    "this model splits in the Megatron layout: q_proj, k_proj, v_proj, w1, w3 and output colwise; output_proj, w2 "
    "and tok_embeddings rowwise; sa_norm, mlp_norm and norm sequence_parallel (kept whole); attn and mlp "
    "prepare_module_input; a mixture of experts' router.gate no_parallel, its experts expert_tensor_parallel, its "
    "shared_expert's w1, w3 colwise and w2 rowwise";

std::string entry_text(const ft::ModuleParallelism& entry) {
  return "\"" + entry.pattern + "\" (" + std::string(ft::parallel_style_name(entry.style)) + ")";
}

// Each module's style from the plan, every entry matching at least one module, no module twice.
std::map<std::string, ParallelStyle> resolve_plan(const std::vector<Module>& modules, std::size_t num_layers,
                                                  const std::vector<ft::ModuleParallelism>& plan) {
  std::map<std::string, ParallelStyle> styles;
  std::map<std::string, std::string> matched_by;
  for (const auto& entry : plan) {
    bool any = false;
    for (const auto& m : modules) {
      if (!ft::module_pattern_matches(entry.pattern, m.path)) continue;
      any = true;
      if (const auto it = matched_by.find(m.path); it != matched_by.end())
        throw ft::Error("plan entries " + it->second + " and " + entry_text(entry) + " both name " + m.path);
      const auto accepted = accepted_style(m.role);
      if (!accepted || *accepted != entry.style)
        throw ft::Error("plan entry " + entry_text(entry) + " would split " + m.path + " " +
                        std::string(ft::parallel_style_name(entry.style)) + ", which this model cannot do" +
                        (accepted ? " (it accepts " + std::string(ft::parallel_style_name(*accepted)) + " there)"
                         : m.role == Role::Replicated ? " (it is whole on every rank: it normalises each local head)"
                                                      : " (it is a container: name the modules inside it)") +
                        "; " + kLayout);
      matched_by[m.path] = entry_text(entry);
      styles[m.path] = entry.style;
    }
    if (!any && !entry.optional)
      throw ft::Error("plan entry " + entry_text(entry) +
                      " names no module of this model; its modules are tok_embeddings, layers.0 .. layers." +
                      std::to_string(static_cast<std::int64_t>(num_layers) - 1) +
                      " (each with sa_norm, attn.{q_proj,k_proj,v_proj,output_proj}, mlp_norm, and mlp.{w1,w2,w3} "
                      "or, for a mixture of experts, mlp.{router.gate,experts,shared_expert.{w1,w2,w3}}), "
                      "norm and output");
  }
  return styles;
}

void require_divisible(std::int64_t value, const char* what, const std::string& where, int size) {
  if (value % size != 0)
    throw ft::Error(where + ": " + what + " (" + std::to_string(value) + ") must be divisible by the tensor-parallel " +
                    "size (tensor_parallel_dim = " + std::to_string(size) + ")");
}

// All of `names` split, or none: a partly split block would compute with mismatched slices.
bool all_or_none(const std::map<std::string, ParallelStyle>& styles, const std::string& block,
                 const std::vector<std::string>& names) {
  std::size_t split = 0;
  for (const auto& n : names) split += styles.count(block + "." + n);
  if (split != 0 && split != names.size()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw ft::Error(block + ": the plan splits only some of " + list +
                    ", which must be split together (their slices feed each other); " + kLayout);
  }
  return split != 0;
}

at::Tensor gathered(const at::Tensor& slice, std::int64_t dim, ft::Collectives& group) {
  const at::Tensor local = slice.detach().contiguous();
  at::Tensor pieces = at::empty({group.size() * local.numel()}, local.options());
  group.all_gather(pieces, local);
  std::vector<std::int64_t> whole = local.sizes().vec();
  whole[static_cast<std::size_t>(dim)] *= group.size();
  if (dim == 0) return pieces.view(whole);
  // [ranks, one slice's shape] -> the slices side by side along `dim`
  std::vector<std::int64_t> stacked{group.size()};
  for (std::int64_t d : local.sizes()) stacked.push_back(d);
  return at::cat(pieces.view(stacked).unbind(0), dim);
}

}  // namespace

void keep_slice(DecoderSplits& splits, at::Tensor& parameter, std::int64_t dim, int rank, int size) {
  if (!parameter.defined()) return;
  const std::int64_t n = parameter.size(dim) / size;
  parameter.set_data(parameter.detach().narrow(dim, rank * n, n).clone(at::MemoryFormat::Contiguous));
  splits.parameters.push_back({parameter, dim});
}

DecoderSplits split_decoder(TransformerDecoderImpl& decoder, const std::vector<ft::ModuleParallelism>& plan,
                            const std::shared_ptr<ft::Collectives>& group) {
  const int size = group->size();
  const int rank = group->rank();
  const DecoderOptions& cfg = decoder.options;
  const std::map<std::string, ParallelStyle> styles =
      resolve_plan(decoder_modules(decoder), decoder.layers.size(), plan);

  // Every check before any change.
  const bool embedding = styles.count("tok_embeddings") != 0;
  const bool output = styles.count("output") != 0;
  if (cfg.tie_word_embeddings && embedding != output)
    throw ft::Error(std::string("the plan splits ") +
                    (embedding ? "tok_embeddings but not output"
                               : "output but not "
                                 "tok_embeddings") +
                    ", which are one matrix in this tied model: split both or neither");
  if (embedding || output)
    require_divisible(cfg.vocab_size, "vocab_size", embedding ? "tok_embeddings" : "output", size);
  std::vector<bool> attention(decoder.layers.size()), mlp(decoder.layers.size());
  for (std::size_t i = 0; i < decoder.layers.size(); ++i) {
    const std::string p = "layers." + std::to_string(i);
    attention[i] = all_or_none(styles, p + ".attn", {"q_proj", "k_proj", "v_proj", "output_proj"});
    if (attention[i]) {
      const AttentionOptions& heads = decoder.layers[i]->attn->options();
      require_divisible(heads.num_heads, "num_heads", p + ".attn", size);
      require_divisible(heads.num_kv_heads, "num_kv_heads", p + ".attn", size);
    }
    const auto* moe = dynamic_cast<const MixtureOfExpertsImpl*>(decoder.layers[i]->mlp.get());
    if (moe) {
      std::vector<std::string> parts{"router.gate", "experts"};
      if (moe->shared_expert) parts.insert(parts.end(), {"shared_expert.w1", "shared_expert.w2", "shared_expert.w3"});
      mlp[i] = all_or_none(styles, p + ".mlp", parts);
      if (mlp[i]) {
        require_divisible(moe->options().expert_hidden_dim, "the experts' hidden width", p + ".mlp.experts", size);
        if (moe->shared_expert)
          require_divisible(moe->options().shared_expert_hidden_dim, "the shared expert's hidden width",
                            p + ".mlp.shared_expert", size);
      }
      continue;
    }
    mlp[i] = all_or_none(styles, p + ".mlp", {"w1", "w2", "w3"});
    if (mlp[i]) {
      const auto* dense = dynamic_cast<const FeedForwardImpl*>(decoder.layers[i]->mlp.get());
      if (!dense) throw ft::Error(p + ".mlp: only a dense MLP (w1, w2, w3) splits in the Megatron layout");
      require_divisible(dense->w1->weight.size(0), "intermediate_dim", p + ".mlp", size);
    }
  }

  at::NoGradGuard no_grad;
  DecoderSplits splits;
  splits.group = group;
  const std::int64_t vocab_offset = rank * (cfg.vocab_size / size);
  if (embedding) {
    keep_slice(splits, decoder.tok_embeddings, 0, rank, size);
    decoder.embedding_vocab_shard = ft::VocabShard{group, vocab_offset};
  }
  if (output) {
    if (!cfg.tie_word_embeddings) keep_slice(splits, decoder.output, 0, rank, size);
    splits.output_vocab_shard = ft::VocabShard{group, vocab_offset};
  }
  for (std::size_t i = 0; i < decoder.layers.size(); ++i) {
    auto& layer = decoder.layers[i];
    if (attention[i]) {
      auto& attn = layer->attn;
      for (auto* projection : {&attn->q_proj, &attn->k_proj, &attn->v_proj}) {
        keep_slice(splits, (*projection)->weight, 0, rank, size);
        keep_slice(splits, (*projection)->bias, 0, rank, size);
      }
      keep_slice(splits, attn->output_proj->weight, 1, rank, size);
      attn->output_proj->sums_output_over = group;
      attn->use_local_heads(attn->options().num_heads / size, attn->options().num_kv_heads / size);
      if (attn->q_norm) {
        attn->q_norm->sums_scale_gradient_over = group;
        attn->k_norm->sums_scale_gradient_over = group;
      }
      layer->attn_split_over = group;
    }
    if (mlp[i]) {
      if (auto* moe = dynamic_cast<MixtureOfExpertsImpl*>(layer->mlp.get())) {
        // Every expert's hidden features split; the router whole on every rank. The block sums
        // its partial output (experts and shared expert together) once.
        keep_slice(splits, moe->experts->w1, 1, rank, size);
        keep_slice(splits, moe->experts->w3, 1, rank, size);
        keep_slice(splits, moe->experts->w2, 2, rank, size);
        if (moe->shared_expert) {
          keep_slice(splits, moe->shared_expert->w1->weight, 0, rank, size);
          keep_slice(splits, moe->shared_expert->w3->weight, 0, rank, size);
          keep_slice(splits, moe->shared_expert->w2->weight, 1, rank, size);
        }
        moe->split_over = group;
        moe->router->sums_gate_gradient_over = group;
        layer->mlp_split_over = group;
        continue;
      }
      auto& dense = static_cast<FeedForwardImpl&>(*layer->mlp);
      keep_slice(splits, dense.w1->weight, 0, rank, size);
      keep_slice(splits, dense.w3->weight, 0, rank, size);
      keep_slice(splits, dense.w2->weight, 1, rank, size);
      dense.w2->sums_output_over = group;
      layer->mlp_split_over = group;
    }
  }
  return splits;
}

void with_whole_parameters(const DecoderSplits& splits, const std::function<void()>& fn) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> slices;
  slices.reserve(splits.parameters.size());
  for (const auto& split : splits.parameters) {
    at::Tensor parameter = split.parameter;
    // Same storage, sizes and offset: the slice as the strategy laid it out, restored afterwards.
    slices.push_back(parameter.variable_data());
    parameter.set_data(gathered(slices.back(), split.dim, *splits.group));
  }
  auto restore = [&] {
    for (std::size_t i = 0; i < slices.size(); ++i) {
      at::Tensor parameter = splits.parameters[i].parameter;
      parameter.set_data(slices[i]);
    }
  };
  try {
    fn();
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

}  // namespace ft::nn
