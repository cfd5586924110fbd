// bitsandbytes' Adam family (bitsandbytes.optim.AdamW8bit, Adam8bit, PagedAdamW8bit, PagedAdamW)
// against bitsandbytes itself: trajectories it recorded on the CPU with its own backend
// (tests/optimizer_references/make_bitsandbytes_reference.py, the optimizer_references fixture)
// are replayed through the registry with the same gradients. The dynamic maps are bitsandbytes'
// own up to float rounding; after the first step the absmax values are its own and every 8-bit
// code is the nearest to its value (bitsandbytes' CPU backend rounds values near zero coarsely,
// docs/parity.md); over six steps the decoded moments stay within a few code steps of
// bitsandbytes' and the parameters within a small fraction of the learning rate; the 32-bit
// moments (a tensor below min_8bit_size) agree to float rounding. The state a checkpoint holds (the codes,
// not a decoded copy) resumes bit for bit, and a state of another form is refused naming both.
#include "builtin_plugins.h"

#include "dynamic_quantization.h"
#include "safetensors.h"

#include <ft/optimizer.h>

#include <ATen/ATen.h>
#include <torch/optim/adamw.h>

#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr int kSteps = 6;
constexpr int kParams = 3;

std::string reference_dir() { return std::string(FT_FAMILY_GOLDEN_DIR) + "/../optimizer_references"; }

struct Case {
  std::string name, keys;
  double lr, weight_decay;
};

// The keyword arguments the reference script gives each optimizer, as config keys.
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"AdamW8bit", "lr = 1e-2\nweight_decay = 0.1\n", 1e-2, 0.1},
      {"Adam8bit", "lr = 3e-3\nbetas = [0.8, 0.99]\n", 3e-3, 0.0},
      {"PagedAdamW8bit", "lr = 1e-2\n", 1e-2, 1e-2},
      {"PagedAdamW", "lr = 1e-2\nweight_decay = 0.05\n", 1e-2, 0.05},
  };
  return c;
}

class BitsAndBytesOptimizers : public fttest::BuiltinPluginsTest {
 protected:
  static std::shared_ptr<ft::Optimizer> optimizer(const std::string& name, const std::string& keys,
                                                  std::vector<at::Tensor> params) {
    return registry().instantiate<ft::Optimizer>(
        root("[optimizer]\n_component_ = \"bitsandbytes.optim." + name + "\"\n" + keys).table("optimizer"),
        {std::move(params)});
  }
};

std::map<std::string, at::Tensor> state_of(const ft::Optimizer& opt) {
  std::map<std::string, at::Tensor> out;
  for (const auto& t : opt.state()) out[t.name] = t.tensor;
  return out;
}

at::Tensor decoded(const at::Tensor& codes, const at::Tensor& absmax, bool is_signed) {
  const auto& map = ftoptim::dynamic_map(is_signed);
  const at::Tensor table = at::from_blob(const_cast<float*>(map.data()), {256}, at::kFloat);
  const at::Tensor values = table.index_select(0, codes.reshape({-1}).to(at::kLong));
  const std::int64_t n = values.numel(), blocks = absmax.numel();
  const at::Tensor scale = absmax.repeat_interleave(256).slice(0, 0, n);
  EXPECT_EQ(blocks, (n + 255) / 256);
  return (values * scale).reshape(codes.sizes());
}

// The largest distance between neighbouring codes of a map, relative to absmax.
double widest_code_step(bool is_signed) {
  const auto& map = ftoptim::dynamic_map(is_signed);
  double widest = 0;
  for (std::size_t i = 1; i < map.size(); ++i) widest = std::max(widest, static_cast<double>(map[i] - map[i - 1]));
  return widest;
}

// The first moment after step 1 from a zero state: (1 - beta1) * grad, in float32.
at::Tensor first_moment(const at::Tensor& grad, const Case& c) {
  const float beta1 = c.name == "Adam8bit" ? 0.8f : 0.9f;
  return grad * (1.0f - beta1);
}

// Every code is the one nearest to its value over the block's absmax (brute force over the map).
void expect_nearest_codes(const at::Tensor& codes, const at::Tensor& absmax, const at::Tensor& values, bool is_signed) {
  const auto& map = ftoptim::dynamic_map(is_signed);
  const auto* code = codes.data_ptr<std::uint8_t>();
  const auto* value = values.contiguous().data_ptr<float>();
  const auto* scale = absmax.data_ptr<float>();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < codes.numel(); ++i) {
    const float x = value[i] / scale[i / 256];
    float best = 2.0f;
    for (float m : map) best = std::min(best, std::fabs(m - x));
    if (std::fabs(map[code[i]] - x) > best) ++wrong;
  }
  EXPECT_EQ(wrong, 0) << "codes that are not the nearest";
}

// The code lookup against a brute-force search over the map: values spread over every decade of
// both signs, each code itself, and the midpoints between neighbours (a tie takes the lower).
TEST(DynamicQuantization, EveryValueGetsItsNearestCode) {
  for (const bool is_signed : {true, false}) {
    const auto& map = ftoptim::dynamic_map(is_signed);
    std::vector<float> values;
    for (int e = -9; e <= 0; ++e)
      for (int k = 1; k <= 1000; ++k) {
        const float v = static_cast<float>(std::pow(10.0, e) * k / 1000.0);
        values.push_back(v);
        if (is_signed) values.push_back(-v);
      }
    for (std::size_t i = 0; i < map.size(); ++i) {
      values.push_back(map[i]);
      if (i + 1 < map.size()) values.push_back((map[i] + map[i + 1]) / 2.0f);
    }
    values.push_back(0.0f);
    for (const float x : values) {
      std::size_t best = 0;
      for (std::size_t i = 1; i < map.size(); ++i)
        if (std::fabs(map[i] - x) < std::fabs(map[best] - x)) best = i;
      ASSERT_EQ(static_cast<std::size_t>(ftoptim::nearest_code(map, x)), best)
          << (is_signed ? "signed" : "unsigned") << " map, value " << x;
    }
  }
}

TEST_F(BitsAndBytesOptimizers, TrajectoriesFollowBitsandbytesWithinTheQuantizationError) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const ft_checkpointers::SafetensorsFile reference(reference_dir() + "/" + c.name + ".safetensors");
    auto ref = [&](const std::string& name) { return reference.tensor(name).clone(); };
    std::vector<at::Tensor> params;
    for (int i = 0; i < kParams; ++i) params.push_back(ref("initial." + std::to_string(i)));
    auto opt = optimizer(c.name, c.keys, params);
    std::vector<torch::Tensor> fp32;
    for (const auto& p : params) fp32.push_back(p.clone().requires_grad_(true));
    torch::optim::AdamW float32_adamw(
        fp32, torch::optim::AdamWOptions(c.lr)
                  .betas({c.name == "Adam8bit" ? 0.8 : 0.9, c.name == "Adam8bit" ? 0.99 : 0.999})
                  .weight_decay(c.weight_decay));
    for (int step = 1; step <= kSteps; ++step) {
      for (int i = 0; i < kParams; ++i) {
        params[i].mutable_grad() = ref("grad." + std::to_string(step) + "." + std::to_string(i));
        fp32[i].mutable_grad() = params[i].grad().clone();
      }
      opt->step();
      float32_adamw.step();
      const auto state = state_of(*opt);
      for (int i = 0; i < kParams; ++i) {
        SCOPED_TRACE("step " + std::to_string(step) + ", parameter " + std::to_string(i));
        const std::string ours = "state." + std::to_string(i) + ".";
        const std::string theirs = "state." + std::to_string(step) + "." + std::to_string(i) + ".";
        EXPECT_EQ(state.at(ours + "step").item<std::int64_t>(), ref(theirs + "step").item<std::int64_t>());
        const at::Tensor state1 = ref(theirs + "state1");
        ASSERT_EQ(state.at(ours + "state1").scalar_type(), state1.scalar_type()) << "8-bit where bitsandbytes is not";
        const at::Tensor param = ref("param." + std::to_string(step) + "." + std::to_string(i));
        if (state1.scalar_type() != at::kByte) {
          // 32-bit moments: the same float32 arithmetic up to rounding.
          EXPECT_TRUE(at::allclose(state.at(ours + "state1"), state1, 1e-5, 1e-7));
          EXPECT_TRUE(at::allclose(state.at(ours + "state2"), ref(theirs + "state2"), 1e-5, 1e-9));
          EXPECT_TRUE(at::allclose(params[i], param, 1e-5, 1e-6));
          continue;
        }
        // The maps: bitsandbytes' formula, evaluated as torch evaluates it up to torch.linspace's
        // rounding, which depends on the CPU's vector width (one float32 ulp on a few codes).
        EXPECT_TRUE(at::allclose(state.at(ours + "qmap1"), ref(theirs + "qmap1"), 0, 1.2e-7)) << "signed map";
        EXPECT_TRUE(at::allclose(state.at(ours + "qmap2"), ref(theirs + "qmap2"), 0, 1.2e-7)) << "unsigned map";
        if (step == 1) {
          // From the same (zero) state: the same absmax, and every code the nearest to its value.
          EXPECT_TRUE(at::allclose(state.at(ours + "absmax1"), ref(theirs + "absmax1"), 1e-6, 0));
          EXPECT_TRUE(at::allclose(state.at(ours + "absmax2"), ref(theirs + "absmax2"), 1e-6, 0));
          expect_nearest_codes(state.at(ours + "state1"), state.at(ours + "absmax1"),
                               first_moment(ref("grad.1." + std::to_string(i)), c), true);
        }
        // The decoded moments: within a few code steps of bitsandbytes' (each step's rounding
        // may go the other way on a midpoint, and the difference carries into the next).
        for (const auto& [field, absmax, is_signed] :
             {std::tuple{"state1", "absmax1", true}, std::tuple{"state2", "absmax2", false}}) {
          const at::Tensor mine = decoded(state.at(ours + field), state.at(ours + absmax), is_signed);
          const at::Tensor bnb = decoded(ref(theirs + field), ref(theirs + absmax), is_signed);
          const double bound = step * widest_code_step(is_signed) * ref(theirs + absmax).max().item<double>();
          EXPECT_LE((mine - bnb).abs().max().item<double>(), bound) << field;
        }
        // The quantization's own error is how far bitsandbytes' parameters are from the float32
        // update's (LibTorch's torch::optim::AdamW with the same gradients): fthost's stay as close,
        // on average and at worst. Elements whose moments are near zero differ most (their
        // update divides by a second moment near zero), in both.
        const at::Tensor exact = fp32[i].detach();
        const double own_mean = (param - exact).abs().mean().item<double>();
        const double own_max = (param - exact).abs().max().item<double>();
        EXPECT_LE((params[i] - exact).abs().mean().item<double>(), 1.5 * own_mean + 1e-7);
        EXPECT_LE((params[i] - exact).abs().max().item<double>(), 1.5 * own_max + 1e-7);
        if (step == kSteps)
          std::cout << c.name << ", parameter " << i << ", step " << step << ": from the float32 update, fthost mean "
                    << (params[i] - exact).abs().mean().item<double>() << " max "
                    << (params[i] - exact).abs().max().item<double>() << "; bitsandbytes mean " << own_mean << " max "
                    << own_max << "\n";
      }
    }
  }
}

// Three steps, the state saved (what a checkpoint holds) and loaded into a new optimizer: the next
// step is the same bit for bit as the uninterrupted optimizer's, codes and parameters.
TEST_F(BitsAndBytesOptimizers, TheStateResumesBitwiseAndAnotherFormIsRefused) {
  const ft_checkpointers::SafetensorsFile reference(reference_dir() + "/AdamW8bit.safetensors");
  auto ref = [&](const std::string& name) { return reference.tensor(name).clone(); };
  auto fresh_params = [&] {
    std::vector<at::Tensor> params;
    for (int i = 0; i < kParams; ++i) params.push_back(ref("initial." + std::to_string(i)));
    return params;
  };
  auto grads = [&](std::vector<at::Tensor>& params, int step) {
    for (int i = 0; i < kParams; ++i)
      params[i].mutable_grad() = ref("grad." + std::to_string(step) + "." + std::to_string(i));
  };
  std::vector<at::Tensor> a = fresh_params();
  auto uninterrupted = optimizer("AdamW8bit", "lr = 1e-2\n", a);
  for (int step = 1; step <= 3; ++step) {
    grads(a, step);
    uninterrupted->step();
  }
  std::vector<ft::NamedTensor> saved;
  for (const auto& t : uninterrupted->state()) saved.push_back({t.name, t.tensor.clone()});
  std::vector<at::Tensor> b;
  for (const auto& p : a) b.push_back(p.detach().clone());
  auto resumed = optimizer("AdamW8bit", "lr = 1e-2\n", b);
  resumed->load_state(saved);
  grads(a, 4);
  grads(b, 4);
  uninterrupted->step();
  resumed->step();
  for (int i = 0; i < kParams; ++i) EXPECT_TRUE(a[i].equal(b[i])) << "parameter " << i;
  const auto x = state_of(*uninterrupted), y = state_of(*resumed);
  for (const auto& [name, tensor] : x) EXPECT_TRUE(tensor.equal(y.at(name))) << name;

  // 8-bit codes into a 32-bit optimizer, and torch.optim's moments into an 8-bit one.
  auto thirty_two = optimizer("PagedAdamW", "", fresh_params());
  const std::string to_32 = fttest::error_of<ft::Error>([&] { thirty_two->load_state(saved); });
  EXPECT_NE(to_32.find("saved 8-bit (uint8 codes), but bitsandbytes.optim.PagedAdamW keeps this parameter's "
                       "moments 32-bit"),
            std::string::npos)
      << to_32;
  std::vector<ft::NamedTensor> torch_adam = {{"state.0.step", at::scalar_tensor(3, at::kLong)},
                                             {"state.0.exp_avg", at::zeros({80, 64})},
                                             {"state.0.exp_avg_sq", at::zeros({80, 64})}};
  auto eight = optimizer("AdamW8bit", "", fresh_params());
  const std::string from_torch = fttest::error_of<ft::Error>([&] { eight->load_state(torch_adam); });
  EXPECT_NE(from_torch.find("saved by torch.optim's Adam (exp_avg, exp_avg_sq); bitsandbytes.optim.AdamW8bit keeps "
                            "its moments 8-bit blockwise"),
            std::string::npos)
      << from_torch;
}

TEST_F(BitsAndBytesOptimizers, SettingsItDoesNotImplementNameTheKey) {
  const at::Tensor p = at::zeros({4});
  for (const auto& [keys, key] :
       std::vector<std::pair<std::string, std::string>>{{"amsgrad = true\n", "amsgrad"},
                                                        {"percentile_clipping = 5\n", "percentile_clipping"},
                                                        {"block_wise = false\n", "block_wise"},
                                                        {"betas = [0.9]\n", "betas"}}) {
    const std::string message = fttest::error_of<ft::ConfigError>([&] { optimizer("AdamW8bit", keys, {p}); });
    EXPECT_NE(message.find("optimizer." + key + ":"), std::string::npos) << message;
  }
  const std::string bits =
      fttest::error_of<ft::ConfigError>([&] { optimizer("PagedAdamW", "optim_bits = 16\n", {p}); });
  EXPECT_NE(bits.find("optimizer.optim_bits: expected 8 or 32"), std::string::npos) << bits;
}

}  // namespace

namespace {

// The demo trained with 8-bit moments: two epochs straight, and the first epoch's checkpoint
// resumed for the second, end with the same weights bit for bit (the codes and absmax values are
// saved, not a decoded copy).
TEST(BitsAndBytesTraining, TheDemoTrainsWith8bitMomentsAndResumesBitwise) {
  const std::string demo = "--config " + std::string(FT_SOURCE_DIR) +
                           "/configs/tiny_demo.toml dataset.source=" + std::string(FT_SOURCE_DIR) +
                           "/configs/demo/sort_tokens.jsonl epochs=2 max_steps_per_epoch=6 "
                           "optimizer._component_=bitsandbytes.optim.PagedAdamW8bit";
  const std::string straight = fttest::temp_dir(), resumed = fttest::temp_dir();
  const auto a = fttest::run_fthost(demo + " output_dir=" + straight);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_NE(a.output.find("8-bit blockwise moments"), std::string::npos) << a.output;
  const std::string state =
      fttest::read_file(straight + "/epoch_0/recipe_state/optimizer-rank-00000-of-00001.safetensors");
  EXPECT_NE(state.find("\"state.0.absmax1\""), std::string::npos) << "the codes' absmax values are saved";
  const auto first = fttest::run_fthost(demo + " epochs=1 output_dir=" + resumed);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const auto second = fttest::run_fthost(demo + " output_dir=" + resumed + " resume_from_checkpoint=true");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_TRUE(fttest::read_file(straight + "/epoch_1/model.safetensors") ==
              fttest::read_file(resumed + "/epoch_1/model.safetensors"));

  // With optimizer_in_bwd every parameter gets an optimizer of its own: bitsandbytes' per-tensor
  // blocks exactly. The run trains and describes the optimizer once, not once per parameter.
  const auto in_backward =
      fttest::run_fthost(demo + " epochs=1 optimizer_in_bwd=true ~clip_grad_norm output_dir=" + fttest::temp_dir());
  ASSERT_EQ(in_backward.exit_code, 0) << in_backward.output;
  std::size_t described = 0;
  for (auto at = in_backward.output.find("8-bit blockwise moments"); at != std::string::npos;
       at = in_backward.output.find("8-bit blockwise moments", at + 1))
    ++described;
  EXPECT_EQ(described, 1u) << in_backward.output;
}

// The demo trained to the end with 8-bit moments sorts the held-out lists as well as with AdamW
// (19 and 20 of 20 when measured: within one list of each other).
TEST(BitsAndBytesTraining, TheDemoSortsHeldOutListsAsWellAsWithAdamW) {
  auto held_out_correct = [](const std::string& optimizer) {
    const std::string out = fttest::temp_dir();
    const auto trained =
        fttest::run_fthost("--config " + std::string(FT_SOURCE_DIR) +
                           "/configs/tiny_demo.toml dataset.source=" + std::string(FT_SOURCE_DIR) +
                           "/configs/demo/sort_tokens.jsonl output_dir=" + out + " optimizer._component_=" + optimizer);
    EXPECT_EQ(trained.exit_code, 0) << trained.output;
    const auto answered =
        fttest::run_fthost("generate --checkpoint " + out + "/epoch_3 --prompts " + std::string(FT_SOURCE_DIR) +
                           "/configs/demo/sort_heldout.jsonl --stop-token 2 --max-new-tokens 20");
    EXPECT_EQ(answered.exit_code, 0) << answered.output;
    const auto at = answered.output.find("answers as expected: ");
    EXPECT_NE(at, std::string::npos) << answered.output;
    return at == std::string::npos ? -1 : std::stoi(answered.output.substr(at + 21));
  };
  const int adamw = held_out_correct("torch.optim.AdamW");
  const int eight_bit = held_out_correct("bitsandbytes.optim.AdamW8bit");
  EXPECT_GE(adamw, 18);
  EXPECT_GE(eight_bit, adamw - 1);
}

}  // namespace
