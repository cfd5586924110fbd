#include "bitsandbytes_optimizers.h"

#include "bitsandbytes_adam_update.h"
#include "cuda/bitsandbytes_adam_cuda.h"
#include "dynamic_quantization.h"
#include "optimizer_state_parts.h"

#include <ft/errors.h>
#include <ft/log.h>
#include <ft/optimizer.h>
#include <ft/text.h>

#include <ATen/ops/from_blob.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace ftoptim {

namespace {

using ft::ValueType;

struct Variant {
  const char* name;
  const char* summary;
  const char* weight_decay_default;
  int bits;    // 8, or 32 for every tensor
  bool paged;  // CUDA unified memory; the same as unpaged on the CPU
  bool takes_optim_bits;
};

// One parameter's state under bitsandbytes' state_dict names.
struct State {
  std::int64_t step = 0;
  at::Tensor state1, state2;    // uint8 codes (8-bit) or float32 moments
  at::Tensor absmax1, absmax2;  // 8-bit only: float32, one per block of 256
  bool eight_bit() const { return state1.scalar_type() == at::kByte; }
};

at::Tensor map_tensor(bool is_signed) {
  const QuantizationMap& map = dynamic_map(is_signed);
  return at::from_blob(const_cast<float*>(map.data()), {256}, at::kFloat).clone();
}

class BitsAndBytesAdam final : public ft::Optimizer {
 public:
  BitsAndBytesAdam(std::string name, std::vector<at::Tensor> params, AdamHyperparameters hyper, int bits,
                   std::int64_t min_8bit_size, bool paged)
      : name_(std::move(name)),
        params_(std::move(params)),
        state_(params_.size()),
        hyper_(hyper),
        bits_(bits),
        min_8bit_size_(min_8bit_size),
        paged_(paged) {
    for (const auto& p : params_)
      if (!p.device().is_cpu() && !p.is_cuda())
        throw ft::Error(name_ + ": parameters on " + p.device().str() +
                        ": bitsandbytes' optimizers step on the CPU and on CUDA devices");
  }

  void step() override { step_scaled(1.0); }
  bool step_with_gradient_scale(double gradient_scale) override {
    // Only float32 gradients round as an in-place multiply would inside the update.
    if (!std::all_of(params_.begin(), params_.end(), [](const at::Tensor& p) { return p.scalar_type() == at::kFloat; }))
      return false;
    step_scaled(gradient_scale);
    return true;
  }
  void zero_grad(bool set_to_none) override { zero_gradients(params_, set_to_none); }
  double lr() const override { return hyper_.lr; }
  void set_lr(double lr) override { hyper_.lr = lr; }

  std::vector<ft::NamedTensor> state() const override {
    std::vector<ft::NamedTensor> out;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (!state_[i]) continue;
      const State& s = *state_[i];
      const std::string prefix = "state." + std::to_string(i) + ".";
      out.push_back({prefix + "step", at::scalar_tensor(s.step, at::kLong)});
      out.push_back({prefix + "state1", s.state1});
      out.push_back({prefix + "state2", s.state2});
      if (s.eight_bit()) {
        out.push_back({prefix + "absmax1", s.absmax1});
        out.push_back({prefix + "absmax2", s.absmax2});
        out.push_back({prefix + "qmap1", map_tensor(true)});
        out.push_back({prefix + "qmap2", map_tensor(false)});
      }
    }
    return out;
  }

  void load_state(const std::vector<ft::NamedTensor>& saved) override {
    const auto by_param = state_by_parameter(saved, params_.size(), name_);
    std::vector<std::optional<State>> loaded(params_.size());
    for (const auto& [index, fields] : by_param) loaded[index] = restored(index, fields);
    state_ = std::move(loaded);
  }

 private:
  bool quantizes(const at::Tensor& p) const { return bits_ == 8 && p.numel() >= min_8bit_size_; }

  // State beside parameter `p`: on its device, in unified memory for a paged optimizer on CUDA.
  at::Tensor zeros_for(const at::Tensor& p, at::IntArrayRef sizes, at::ScalarType dtype) const {
    if (p.is_cuda() && paged_) return paged_zeros(sizes, dtype, p.device());
    return at::zeros(sizes, at::TensorOptions().dtype(dtype).device(p.device()));
  }
  at::Tensor placed_for(const at::Tensor& p, const at::Tensor& saved) const {
    if (!p.is_cuda()) return saved.contiguous().clone();
    at::Tensor placed = zeros_for(p, saved.sizes(), saved.scalar_type());
    placed.copy_(saved);
    return placed;
  }

  State& state_for(std::size_t i) {
    if (!state_[i]) {
      const at::Tensor& p = params_[i];
      State s;
      if (quantizes(p)) {
        const std::int64_t blocks = (p.numel() + kQuantizationBlock - 1) / kQuantizationBlock;
        // As bitsandbytes starts them: codes 0 with absmax 0, which decode to zeros.
        s.state1 = zeros_for(p, p.sizes(), at::kByte);
        s.state2 = zeros_for(p, p.sizes(), at::kByte);
        s.absmax1 = zeros_for(p, {blocks}, at::kFloat);
        s.absmax2 = zeros_for(p, {blocks}, at::kFloat);
      } else {
        s.state1 = zeros_for(p, p.sizes(), at::kFloat);
        s.state2 = zeros_for(p, p.sizes(), at::kFloat);
      }
      state_[i] = std::move(s);
    }
    return *state_[i];
  }

  void step_scaled(double gradient_scale) {
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const at::Tensor& p = params_[i];
      const at::Tensor& grad = p.grad();
      if (!grad.defined()) continue;
      State& s = state_for(i);
      s.step += 1;
      const at::Tensor g = grad.is_contiguous() ? grad : grad.contiguous();
      if (s.eight_bit())
        adam_8bit_blockwise_update(p, g, s.state1, s.state2, s.absmax1, s.absmax2, s.step, hyper_, gradient_scale);
      else
        adam_32bit_update(p, g, s.state1, s.state2, s.step, hyper_, gradient_scale);
    }
  }

  // A checkpoint's state for parameter `index`, refused when it was saved by an optimizer that
  // keeps it in another form (torch.optim's exp_avg, or 8-bit codes for a 32-bit run and back).
  State restored(std::size_t index, const FieldTensors& fields) const {
    const at::Tensor& p = params_[index];
    const std::string prefix = "state." + std::to_string(index) + ".";
    const bool eight_bit = quantizes(p);
    const char* wanted =
        eight_bit ? "8-bit blockwise (uint8 state1/state2 with absmax1/absmax2)" : "32-bit (float32 state1/state2)";
    auto field = [&](const std::string& name) -> const at::Tensor& {
      auto it = fields.find(name);
      if (it == fields.end()) {
        if (fields.count("exp_avg"))
          throw ft::Error("optimizer state \"" + prefix + "exp_avg\": saved by torch.optim's Adam (exp_avg, " +
                          "exp_avg_sq); " + name_ + " keeps its moments " + wanted +
                          ": converting optimizer state between them on resume is not supported");
        throw ft::Error("optimizer state \"" + prefix + name + "\" is missing");
      }
      return it->second;
    };
    State s;
    s.step = restored_step(fields, prefix);
    const at::Tensor& state1 = field("state1");
    const bool saved_eight_bit = state1.scalar_type() == at::kByte;
    if (saved_eight_bit != eight_bit)
      throw ft::Error("optimizer state \"" + prefix + "state1\": saved " +
                      (saved_eight_bit ? "8-bit (uint8 codes)" : "32-bit (float32)") + ", but " + name_ +
                      " keeps this parameter's moments " + wanted +
                      ": converting optimizer state between 32-bit and 8-bit on resume is not supported");
    auto copy_of = [&](const std::string& name, at::ScalarType dtype, at::IntArrayRef shape) {
      const at::Tensor& t = field(name);
      if (t.scalar_type() != dtype || t.sizes() != shape)
        throw ft::Error("optimizer state \"" + prefix + name + "\": " + c10::toString(t.scalar_type()) + " " +
                        ft::shape_text(t.sizes()) + ", expected " + c10::toString(dtype) + " " + ft::shape_text(shape));
      return placed_for(p, t);
    };
    const at::ScalarType state_type = eight_bit ? at::kByte : at::kFloat;
    s.state1 = copy_of("state1", state_type, p.sizes());
    s.state2 = copy_of("state2", state_type, p.sizes());
    if (eight_bit) {
      const std::int64_t blocks = (p.numel() + kQuantizationBlock - 1) / kQuantizationBlock;
      s.absmax1 = copy_of("absmax1", at::kFloat, {blocks});
      s.absmax2 = copy_of("absmax2", at::kFloat, {blocks});
      for (const auto& [name, is_signed] : {std::pair{"qmap1", true}, {"qmap2", false}})
        if (fields.count(name) && !field(name).equal(map_tensor(is_signed)))
          throw ft::Error("optimizer state \"" + prefix + name +
                          "\": not bitsandbytes' dynamic map; the codes cannot be read with it");
    }
    return s;
  }

  std::string name_;
  std::vector<at::Tensor> params_;
  std::vector<std::optional<State>> state_;
  AdamHyperparameters hyper_;
  int bits_;
  std::int64_t min_8bit_size_;
  bool paged_;
};

// Said once per process: a paged optimizer on the CPU is the plain one.
void note_paging_on_cpu(const std::string& name) {
  static std::once_flag said;
  std::call_once(said, [&] {
    ft::log::info(
        "{}: paged optimizer state is CUDA unified memory the GPU can evict to the host; on the CPU it is "
        "ordinary memory, and the update is the same",
        name);
  });
}

ft::Schema schema_of(const Variant& v) {
  ft::Schema s;
  s.optional("lr", ValueType::Float, "1e-3", "learning rate")
      .optional("betas", ValueType::List, "[0.9, 0.999]", "coefficients of the running averages")
      .optional("eps", ValueType::Float, "1e-8", "denominator term for numerical stability")
      .optional("weight_decay", ValueType::Float, v.weight_decay_default,
                "decoupled weight decay (p *= 1 - lr * weight_decay), as bitsandbytes applies it for Adam too")
      .optional("amsgrad", ValueType::Bool, "false", "not supported by bitsandbytes' 8-bit Adam: false only")
      .optional("min_8bit_size", ValueType::Int, "4096",
                "tensors with fewer values keep float32 moments, as bitsandbytes does")
      .optional("percentile_clipping", ValueType::Int, "100",
                "bitsandbytes' adaptive gradient clipping: 100 (off) only")
      .optional("block_wise", ValueType::Bool, "true", "blockwise quantization (256 values per absmax): true only");
  if (v.takes_optim_bits) s.optional("optim_bits", ValueType::Int, "32", "32: float32 moments; 8: 8-bit blockwise");
  if (!v.paged) s.optional("is_paged", ValueType::Bool, "false", "paged state (CUDA unified memory)");
  return s;
}

std::unique_ptr<ft::Optimizer> make(const Variant& v, const ft::ConfigNode& cfg, ft::Optimizer::Args args) {
  AdamHyperparameters h;
  h.lr = cfg.get<double>("lr");
  std::tie(h.beta1, h.beta2) = adam_betas(cfg);
  h.eps = cfg.get<double>("eps");
  h.weight_decay = cfg.get<double>("weight_decay");
  h.decoupled_weight_decay = true;
  if (cfg.get<bool>("amsgrad")) cfg.fail("amsgrad", "bitsandbytes' Adam has no AMSGrad variant; set it to false");
  if (cfg.get<std::int64_t>("percentile_clipping") != 100)
    cfg.fail("percentile_clipping", "only 100 (no adaptive clipping) is supported; clip with clip_grad_norm");
  if (!cfg.get<bool>("block_wise"))
    cfg.fail("block_wise", "only blockwise quantization (true, bitsandbytes' default) is supported");
  const std::int64_t min_8bit_size = cfg.get<std::int64_t>("min_8bit_size");
  if (min_8bit_size < 0) cfg.fail("min_8bit_size", "must be 0 or more");
  int bits = v.bits;
  if (v.takes_optim_bits) {
    const std::int64_t optim_bits = cfg.get<std::int64_t>("optim_bits");
    if (optim_bits != 8 && optim_bits != 32) cfg.fail("optim_bits", "expected 8 or 32");
    bits = static_cast<int>(optim_bits);
  }
  const bool paged = v.paged || cfg.get<bool>("is_paged", false);
  const bool on_cuda = !args.params.empty() && args.params.front().is_cuda();
  if (paged && !on_cuda) note_paging_on_cpu(v.name);
  // Once: optimizer_in_bwd builds one optimizer per parameter from the same table.
  static std::once_flag described;
  std::call_once(described, [&] {
    ft::log::info("{}: {} moments (tensors below {} values: 32-bit), fthost's fused {} kernel{}", cfg.path(),
                  bits == 8 ? "8-bit blockwise" : "32-bit", min_8bit_size, on_cuda ? "CUDA" : "CPU",
                  paged && on_cuda ? ", state in CUDA unified memory (paged)" : "");
  });
  return std::make_unique<BitsAndBytesAdam>(v.name, std::move(args.params), h, bits, min_8bit_size, paged);
}

constexpr Variant kVariants[] = {
    {"bitsandbytes.optim.AdamW8bit", "AdamW with 8-bit blockwise moments (bitsandbytes)", "1e-2", 8, false, false},
    {"bitsandbytes.optim.Adam8bit", "Adam with 8-bit blockwise moments (bitsandbytes)", "0.0", 8, false, false},
    {"bitsandbytes.optim.PagedAdamW8bit", "AdamW with paged 8-bit blockwise moments (bitsandbytes)", "1e-2", 8, true,
     false},
    {"bitsandbytes.optim.PagedAdamW", "AdamW with paged moments, 32-bit unless optim_bits = 8 (bitsandbytes)", "1e-2",
     32, true, true},
    {"bitsandbytes.optim.PagedAdamW32bit", "AdamW with paged float32 moments (bitsandbytes)", "1e-2", 32, true, false},
};

}  // namespace

void register_bitsandbytes_optimizers(ft::Registry& reg) {
  for (const Variant& v : kVariants)
    reg.add<ft::Optimizer>(v.name, schema_of(v), v.summary,
                           [&v](const ft::ConfigNode& cfg, ft::Optimizer::Args args) { return make(v, cfg, args); });
}

}  // namespace ftoptim
