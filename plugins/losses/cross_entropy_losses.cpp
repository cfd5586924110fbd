// Plugin ft_losses: token cross-entropy in the three shapes torchtune configs name. Each returns
// the sum over targets != ignore_index; the recipe normalises by the step's token count.
#include <ft/config.h>
#include <ft/loss.h>
#include <ft/plugin.h>
#include <ft/tensor_parallel.h>
#include <ft_kernels/fused_ops.h>

#include <ATen/ATen.h>

namespace {

using ft::ValueType;

// `vocab_shard`: the logits hold one tensor-parallel rank's slice of the vocabulary (loss parallel).
// Otherwise computed in float32 whatever the logits' dtype, as torchtune upcasts each chunk; the
// fused kernel reads bfloat16 logits directly instead of materialising a float32 copy.
at::Tensor cross_entropy_sum(const at::Tensor& logits, const at::Tensor& targets, std::int64_t ignore_index,
                             const std::optional<ft::VocabShard>& vocab_shard) {
  if (vocab_shard) return ft::vocab_parallel_cross_entropy_sum(logits, targets, ignore_index, *vocab_shard);
  return ft_kernels::cross_entropy_sum(logits, targets, ignore_index);
}

// torch.nn.CrossEntropyLoss over the whole [b, s, vocab] logits.
class FullCrossEntropy final : public ft::Loss {
 public:
  explicit FullCrossEntropy(std::int64_t ignore_index) : ignore_index_(ignore_index) {}
  std::int64_t ignore_index() const override { return ignore_index_; }
  ft::OutputRequest output_request() const override { return {1, false}; }
  bool supports_vocab_parallel() const override { return true; }
  at::Tensor sum(const ft::ModelOutput& out, const at::Tensor& targets, ft::Model&) override {
    at::Tensor logits = out.logits.size() == 1 ? out.logits[0] : at::cat(out.logits, 1);
    return cross_entropy_sum(logits, targets, ignore_index_, out.vocab_shard);
  }

 private:
  std::int64_t ignore_index_;
};

// torchtune.modules.loss.CEWithChunkedOutputLoss: the loss of each chunk of the sequence summed
// on its own, then the chunk sums. torchtune chunks to bound the float32 upcast of bfloat16
// logits; the fused kernel reads them without one, so it takes the whole logits in one pass and
// only adds up as the chunks would (chunked_cross_entropy_sum). The model is asked for one
// logits tensor: projecting chunk by chunk costs a weight gradient per chunk in backward.
class ChunkedCrossEntropy final : public ft::Loss {
 public:
  ChunkedCrossEntropy(int chunks, std::int64_t ignore_index) : chunks_(chunks), ignore_index_(ignore_index) {}
  std::int64_t ignore_index() const override { return ignore_index_; }
  ft::OutputRequest output_request() const override { return {1, false}; }
  bool supports_vocab_parallel() const override { return true; }
  at::Tensor sum(const ft::ModelOutput& out, const at::Tensor& targets, ft::Model&) override {
    const at::Tensor logits = out.logits.size() == 1 ? out.logits[0] : at::cat(out.logits, 1);
    if (!out.vocab_shard) return ft_kernels::chunked_cross_entropy_sum(logits, targets, ignore_index_, chunks_);
    const std::vector<at::Tensor> logit_chunks = logits.chunk(chunks_, 1);
    const std::vector<at::Tensor> target_chunks = targets.chunk(chunks_, 1);
    at::Tensor total = at::zeros({}, targets.options().dtype(at::kFloat));
    for (std::size_t i = 0; i < logit_chunks.size(); ++i)
      total = total + cross_entropy_sum(logit_chunks[i], target_chunks[i], ignore_index_, out.vocab_shard);
    return total;
  }

 private:
  int chunks_;
  std::int64_t ignore_index_;
};

// torchtune.modules.loss.LinearCrossEntropyLoss: takes the final hidden state, drops the
// positions whose target is ignored, and projects the rest chunk by chunk, so the full
// [tokens, vocab] logits never exist at once in the forward pass.
class LinearCrossEntropy final : public ft::Loss {
 public:
  LinearCrossEntropy(int chunks, std::int64_t ignore_index) : chunks_(chunks), ignore_index_(ignore_index) {}
  std::int64_t ignore_index() const override { return ignore_index_; }
  ft::OutputRequest output_request() const override { return {1, true}; }
  bool supports_vocab_parallel() const override { return true; }
  at::Tensor sum(const ft::ModelOutput& out, const at::Tensor& targets, ft::Model& model) override {
    const at::Tensor& hidden = out.hidden;
    at::Tensor flat_targets = targets.reshape({-1});
    at::Tensor keep = flat_targets.ne(ignore_index_).nonzero().squeeze(1);
    at::Tensor kept_hidden = hidden.reshape({-1, hidden.size(-1)}).index_select(0, keep);
    at::Tensor kept_targets = flat_targets.index_select(0, keep);
    at::Tensor weight = model.output_weight();
    at::Tensor total = at::zeros({}, targets.options().dtype(at::kFloat));
    if (keep.numel() == 0) return total + 0.0 * hidden.sum();  // keeps the graph connected
    const auto hidden_chunks = kept_hidden.chunk(chunks_, 0);
    const auto target_chunks = kept_targets.chunk(chunks_, 0);
    const double cap = out.final_logit_softcap;
    for (std::size_t i = 0; i < hidden_chunks.size(); ++i) {
      // The model's own logits are soft-capped (Gemma 2): the loss computes the same logits.
      const at::Tensor logits = ft::soft_cap(at::linear(hidden_chunks[i], weight), cap);
      total = total + cross_entropy_sum(logits, target_chunks[i], ignore_index_, out.vocab_shard);
    }
    return total;
  }

 private:
  int chunks_;
  std::int64_t ignore_index_;
};

std::int64_t checked_ignore_index(const ft::ConfigNode& cfg) { return cfg.get<std::int64_t>("ignore_index"); }

int checked_chunks(const ft::ConfigNode& cfg) {
  const int chunks = cfg.get<int>("num_output_chunks");
  if (chunks < 1) cfg.fail("num_output_chunks", "must be at least 1, got " + std::to_string(chunks));
  return chunks;
}

void register_components(ft::Registry& reg) {
  ft::Schema full;
  full.optional("ignore_index", ValueType::Int, "-100", "target id excluded from the loss")
      .optional("reduction", ValueType::String, "\"mean\"", "only \"mean\": the recipe normalises per step")
      .optional("label_smoothing", ValueType::Float, "0.0", "only 0.0");
  reg.add<ft::Loss>("torch.nn.CrossEntropyLoss", full, "cross-entropy over the full logits",
                    [](const ft::ConfigNode& cfg, ft::Loss::Args) {
                      if (cfg.get<std::string>("reduction") != "mean")
                        cfg.fail("reduction",
                                 "only \"mean\" is supported: the recipe sums token losses and divides by the "
                                 "tokens of the whole optimizer step");
                      if (cfg.get<double>("label_smoothing") != 0.0)
                        cfg.fail("label_smoothing", "label smoothing is not supported; use 0.0");
                      return std::make_unique<FullCrossEntropy>(checked_ignore_index(cfg));
                    });

  ft::Schema chunked;
  chunked.optional("num_output_chunks", ValueType::Int, "8", "sequence chunks of the output projection")
      .optional("ignore_index", ValueType::Int, "-100", "target id excluded from the loss");
  reg.add<ft::Loss>("torchtune.modules.loss.CEWithChunkedOutputLoss", chunked,
                    "cross-entropy over logits computed in sequence chunks",
                    [](const ft::ConfigNode& cfg, ft::Loss::Args) {
                      return std::make_unique<ChunkedCrossEntropy>(checked_chunks(cfg), checked_ignore_index(cfg));
                    });

  ft::Schema linear = chunked;
  reg.add<ft::Loss>("torchtune.modules.loss.LinearCrossEntropyLoss", linear,
                    "output projection fused into the loss, masked positions skipped",
                    [](const ft::ConfigNode& cfg, ft::Loss::Args) {
                      return std::make_unique<LinearCrossEntropy>(checked_chunks(cfg), checked_ignore_index(cfg));
                    });
}

}  // namespace

FT_PLUGIN("ft_losses", "0.1.0", register_components)
