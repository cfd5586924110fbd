// `fthost plan` through the binary on torchtune's own 8B, 70B and vision configs: the parameter
// counts the model outline finds are the publishers' (Meta's model cards and config.json shapes),
// the per-rank shares follow from them, a budget too small lists changes that lower the peak and
// one that fits, and every listed change is a config the run accepts (planned again from its own
// overrides, it fits). Bad input gets the errors `fthost validate` and the run give.
#include "test_helpers.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>
#include <string>

namespace {

// Meta's published parameter counts (Hugging Face model cards, safetensors metadata).
constexpr double kLlama3_8B = 8030261248.0;
constexpr double kLlama3_1_70B = 70553706496.0;

nlohmann::json plan_json(const std::string& args, int expected_exit) {
  const auto r = fttest::run_command_stdout(std::string(FTHOST_BINARY) + " plan --json " + args + " 2>/dev/null");
  EXPECT_EQ(r.exit_code, expected_exit) << r.output;
  return nlohmann::json::parse(r.output);
}

TEST(PlanCommand, TorchtunesEightBillionConfigOnOneNode) {
  const auto plan = plan_json("--config llama3/8B_full --nproc-per-node 8 --device h100 --seq-len 2048", 0);
  EXPECT_EQ(plan["model"]["parameters"].get<double>(), kLlama3_8B);
  EXPECT_EQ(plan["model"]["layers"], 32);
  EXPECT_EQ(plan["layout"]["shard"], 8);
  EXPECT_TRUE(plan["fits"].get<bool>());
  EXPECT_EQ(plan["device_memory_bytes"].get<double>(), 80.0 * 1024 * 1024 * 1024);
  // bf16 parameters sharded 8 ways (FSDP pads each tensor's rows to a multiple of 8: a few KB),
  // AdamW's two moments in the same dtype.
  const auto& memory = plan["memory"];
  const double shard = kLlama3_8B * 2 / 8;
  EXPECT_NEAR(memory["parameters_bytes"].get<double>(), shard, shard * 1e-4);
  EXPECT_NEAR(memory["optimizer_state_bytes"].get<double>(), 2 * shard, 2 * shard * 1e-4);
  // Every layer checkpointed: each keeps only its [2 x 2048, 4096] bf16 input.
  EXPECT_GE(memory["activations_bytes"].get<double>(), 32.0 * 2 * 2048 * 4096 * 2);
  EXPECT_GE(memory["phases"].size(), 4u);
  double largest = 0;
  for (const auto& phase : memory["phases"]) largest = std::max(largest, phase["bytes"].get<double>());
  EXPECT_EQ(memory["peak_bytes"].get<double>(), largest);
  EXPECT_GT(plan["step"]["seconds"].get<double>(), 0);
  // The checkpoint: bf16 weights and the optimizer's two moments, about 3 x 16 GB.
  EXPECT_NEAR(plan["checkpoint"]["bytes"].get<double>(), 3 * kLlama3_8B * 2, kLlama3_8B * 0.01);
}

TEST(PlanCommand, SeventyBillionOnEightGpusWithTheConfigsCpuOffload) {
  const auto plan = plan_json("--config llama3_1/70B_full --nproc-per-node 8 --device h100 --seq-len 2048", 0);
  EXPECT_EQ(plan["model"]["parameters"].get<double>(), kLlama3_1_70B);
  // fsdp_cpu_offload: the shards, their gradients and AdamW's moments wait in host memory.
  const double host = plan["memory"]["host_bytes"].get<double>();
  EXPECT_NEAR(host, 4 * kLlama3_1_70B * 2 / 8, kLlama3_1_70B * 0.01);
  EXPECT_LT(plan["memory"]["peak_bytes"].get<double>(), 80.0 * 1024 * 1024 * 1024);
}

TEST(PlanCommand, ExpertsSplitByExpertParallelismAreShardedOnlyOverTheRanksHoldingThem) {
  // Qwen3-30B-A3B (Qwen's config.json): 48 layers of 128 experts, each gate, up and down
  // 2048 x 768, 30,532,122,624 parameters in all.
  const double experts = 48.0 * 128 * 3 * 2048 * 768;
  const double rest = 30532122624.0 - experts;
  const auto plan = plan_json(
      "--config qwen3_moe/30B_A3B_full --nproc-per-node 8 --device h100 --seq-len 2048 expert_parallel_dim=8", 0);
  EXPECT_EQ(plan["model"]["parameters"].get<double>(), 30532122624.0);
  // Each rank holds 16 of every layer's experts whole (8 FSDP ranks / 8 expert-parallel ranks
  // leave one rank per shard group) and an eighth of the rest, in bf16.
  const double expected = (experts / 8 + rest / 8) * 2;
  EXPECT_NEAR(plan["memory"]["parameters_bytes"].get<double>(), expected, expected * 1e-4);
}

// Llama 4 Scout with its vision tower (torchtune's scout YAML, images possible): the tower is held
// (sharded) beside the decoder, and its frozen encoder (encoder_trainable false) has no optimizer
// state. The encoder's size from Meta's published vision_config: 34 layers of width 1408, MLP
// 5632, 336-pixel tiles of 14-pixel patches.
TEST(PlanCommand, LlamaFoursFrozenVisionEncoderIsHeldWithoutOptimizerState) {
  const double d = 1408, mlp = 5632, positions = 24 * 24 + 1;
  const double layer = 4 * d * d + 4 * d + d * mlp + mlp + mlp * d + d + 4 * d;
  const double encoder = 34 * layer + 3 * 14 * 14 * d + d + positions * d + 4 * d;
  // Without the YAML's CPU offload it does not fit 8 H100s (exit 1); the shares are planned alike.
  const auto plan = plan_json(
      "--config llama4/scout_17B_16E_full --nproc-per-node 8 --device h100 --seq-len 2048 fsdp_cpu_offload=false", 1);
  ASSERT_EQ(plan["layout"]["shard"], 4);  // tensor_parallel_dim 2: the tower is whole on both, then sharded 4 ways
  const double parameters = plan["memory"]["parameters_bytes"].get<double>();
  const double frozen = encoder * 2 / 4;  // bf16
  // AdamW's two bf16 moments for every parameter but the frozen encoder's (FSDP's row padding: a
  // few KB).
  EXPECT_NEAR(plan["memory"]["optimizer_state_bytes"].get<double>(), 2 * (parameters - frozen), 1e6);
}

// Llama 3.2 11B Vision (torchtune's 11B_full YAML: FSDP over 4 ranks, the language model frozen,
// the encoder and the fusion parameters trained). The counts from the shapes of Meta's published
// config.json (meta-llama/Llama-3.2-11B-Vision): a vision encoder of 32 local and 8 gated global
// layers of width 1280 (MLP 5120, biases on the MLP only) over 560-pixel tiles of 14-pixel
// patches (1601 tokens), 4 tiles, 8 aspect ratios; a projector 7680 -> 4096; a text model of 32
// self-attention and 8 cross-attention layers of width 4096 (32 heads, 8 kv heads of 128, MLP
// 14336), vocabulary 128256 plus 8 image-token rows, an untied output.
struct Llama32Vision11B {
  static constexpr double h = 1280, vision_mlp = 5120, tile_tokens = 1601, tiles = 4, ratios = 8;
  static constexpr double d = 4096, kv = 1024, mlp = 14336, vocab = 128256;
  static constexpr double vision_layer = 4 * h * h + (h * vision_mlp + vision_mlp) + (vision_mlp * h + h) + 4 * h;
  static constexpr double vision = h * 3 * 14 * 14 + h                            // patches, class token
                                   + tile_tokens * h + 1                          // position embedding, gate
                                   + (ratios + 1) * tiles * tile_tokens * h       // per-tile positions
                                   + 2 * ((ratios + 1) * tiles * h + 1)           // pre- and post-tile embeddings
                                   + 4 * h                                        // layernorm_pre, _post
                                   + 32 * vision_layer + 8 * (vision_layer + 2);  // + the global layers' gates
  static constexpr double projector = 7680 * d + d;
  static constexpr double attention = 2 * d * d + 2 * kv * d;
  static constexpr double self_layer = attention + 3 * d * mlp + 2 * d;
  static constexpr double cross_layer = attention + 2 * 128 + 2 + 3 * d * mlp + 2 * d;  // + q/k norms, gates
  static constexpr double total =
      vision + projector + (vocab + 8) * d + 32 * self_layer + 8 * cross_layer + d + vocab * d;
  // torchtune's split: the encoder (its global layers and projector are the fusion parameters),
  // the cross-attention layers and the image tokens' embedding rows train.
  static constexpr double trained = vision + projector + 8 * cross_layer + 8 * d;
};

TEST(PlanCommand, LlamaThreeTwoVisionCountsMetasPublishedShapesAndFreezesTheLanguageModel) {
  using M = Llama32Vision11B;
  ASSERT_EQ(M::total, 10670220835.0);  // the published model's safetensors count
  const std::string config = "--config llama3_2_vision/11B_full --nproc-per-node 4 --device h100 --seq-len 2048";
  const auto plan = plan_json(config, 0);
  EXPECT_EQ(plan["model"]["parameters"].get<double>(), M::total);
  EXPECT_EQ(plan["model"]["trained_parameters"].get<double>(), M::trained);
  // 32 + 8 encoder layers and 40 decoder layers; every self-attention layer checkpointable.
  EXPECT_EQ(plan["model"]["layers"], 80);
  // bf16, sharded 4 ways; gradients and AdamW's two moments for the trained parameters only. FSDP
  // pads each tensor's rows to a multiple of 4: the three per-aspect-ratio embeddings' 9 rows to
  // 12 (the rest: a few KB).
  const double padding = 3 * (M::tiles * M::tile_tokens * M::h) + 2 * 3 * (M::tiles * M::h);
  const auto& memory = plan["memory"];
  EXPECT_NEAR(memory["parameters_bytes"].get<double>(), (M::total + padding) * 2 / 4, 1e5);
  EXPECT_NEAR(memory["gradients_bytes"].get<double>(), (M::trained + padding) * 2 / 4, 1e5);
  EXPECT_NEAR(memory["optimizer_state_bytes"].get<double>(), 2 * (M::trained + padding) * 2 / 4, 2e5);
  // The images: one a sample unless told (the config cannot say), 4 tiles of 560 pixels (the
  // tokenizer sets no max_num_tiles: the model's), 1601 tokens a tile padded to 1608.
  EXPECT_EQ(plan["images"]["per_sample"], 1);
  EXPECT_NE(plan["images"]["per_sample_source"].get<std::string>().find("assumed"), std::string::npos);
  EXPECT_EQ(plan["images"]["tiles_per_image"], 4);
  EXPECT_EQ(plan["images"]["image_size"], 560);
  EXPECT_EQ(plan["images"]["encoder_tokens_per_tile"], 1608);
  // Every self-attention layer checkpointed (the YAML): the 40 encoder layers keep their input,
  // [2 images x 4 tiles x 1608, 1280] each, the shared attention bias [6432, 6432] per image.
  // The images' share: the encoder's, and the cross-attention layers' (never checkpointed), which
  // run only with images.
  const double image = memory["image_activations_bytes"].get<double>();
  const double encoder_inputs = 40.0 * 2 * 4 * 1608 * M::h * 2, biases = 2 * 6432.0 * 6432 * 2;
  EXPECT_GT(image, encoder_inputs + biases);

  const auto text_alone = plan_json(config + " --images-per-sample 0", 0);
  EXPECT_EQ(text_alone["memory"]["image_activations_bytes"].get<double>(), 0);
  // The step's FLOPs add the images' as the model counts them: at least the encoder layers'
  // matmuls (6 x 2 images x 4 x 1608 tokens x 40 layers' weights, 8 micro-batches), not three times.
  const double image_flops = plan["step"]["image_flops_per_rank"].get<double>();
  const double encoder_matmuls = 8 * 6 * 2 * 4 * 1608.0 * 40 * (4 * M::h * M::h + 2 * M::h * M::vision_mlp);
  EXPECT_GT(image_flops, encoder_matmuls);
  EXPECT_LT(image_flops, 3 * encoder_matmuls);
  EXPECT_NEAR(plan["step"]["flops_per_rank"].get<double>() - text_alone["step"]["flops_per_rank"].get<double>(),
              image_flops, 1e-6 * image_flops);
  EXPECT_NEAR(memory["activations_bytes"].get<double>() - text_alone["memory"]["activations_bytes"].get<double>(),
              image, 1);
  // A second image a sample: the encoder's share again, the cross-attention layers' text side not.
  const double two_images = plan_json(config + " --images-per-sample 2", 0)["memory"]["image_activations_bytes"];
  EXPECT_GT(two_images - image, encoder_inputs + biases);
  EXPECT_LT(two_images, 2 * image);

  // torchtune's names for the fusion model's embedding and output projection: units of their own,
  // no longer gathered whole with the root unit through every layer's backward.
  const auto separate = plan_json(config + " 'custom_sharded_layers=[decoder.tok_embeddings,decoder.output]'", 0);
  EXPECT_LT(separate["memory"]["peak_bytes"].get<double>(), memory["peak_bytes"].get<double>());

  const auto text = fttest::run_fthost("plan " + config);
  EXPECT_EQ(text.exit_code, 0) << text.output;
  for (const char* part : {"10.67B parameters (2.64B trained, the rest frozen)", "1 per sample (assumed",
                           "4 tiles an image", "560 x 560 pixels a tile"})
    EXPECT_NE(text.output.find(part), std::string::npos) << part << "\n" << text.output;
}

TEST(PlanCommand, ImagesTheModelCannotTakeAreRefused) {
  const std::string config = "--config llama3_2_vision/11B_full --seq-len 2048";
  fttest::expect_refused("plan " + config + " --tiles-per-image 5",
                         {"--tiles-per-image 5", "the model takes at most 4 tiles an image"});
  fttest::expect_refused("plan " + config + " tokenizer.image_size=448",
                         {"image_size", "the model's tiles are 560 pixels, got 448"});
  fttest::expect_refused("plan --config llama3/8B_full --seq-len 2048 --images-per-sample 2",
                         {"--images-per-sample: torchtune.models.llama3.llama3_8b reads no images"});
}

TEST(PlanCommand, ADeviceTooSmallListsChangesThatFitAndEachOneDoes) {
  const std::string config = "--config llama3/8B_full --device a10g --seq-len 2048";
  const auto plan = plan_json(config, 1);
  EXPECT_FALSE(plan["fits"].get<bool>());
  const double peak = plan["memory"]["peak_bytes"].get<double>();
  // A whole 8B model with AdamW in bf16 is 16 bytes per parameter before any activation.
  EXPECT_GT(peak, 4 * 2 * kLlama3_8B);
  bool one_fits = false;
  for (const auto& change : plan["changes"]) {
    EXPECT_LT(change["peak_bytes"].get<double>(), peak) << change.dump();
    if (!change["fits"].get<bool>()) continue;
    one_fits = true;
    std::string args = config + " --nproc-per-node " + std::to_string(change["nproc_per_node"].get<int>()) +
                       " --nnodes " + std::to_string(change["nnodes"].get<int>());
    for (const auto& o : change["overrides"]) args += " " + o.get<std::string>();
    const auto again = plan_json(args, 0);
    EXPECT_EQ(again["memory"]["peak_bytes"].get<double>(), change["peak_bytes"].get<double>()) << args;
  }
  EXPECT_TRUE(one_fits) << plan["changes"].dump(2);

  const auto text = fttest::run_fthost("plan " + config);
  EXPECT_EQ(text.exit_code, 1);
  for (const char* part : {"DOES NOT FIT", "changes that lower the peak", "fits", "per rank at the peak"})
    EXPECT_NE(text.output.find(part), std::string::npos) << part << "\n" << text.output;
}

TEST(PlanCommand, SeqLenDataPlansTheDatasetsLongestSample) {
  // The tiny Alpaca run without its tokenizer's max_seq_len: samples keep their own lengths.
  const std::string fixtures = fttest::fixtures_dir();
  const std::string config = "--config " + std::string(FT_SOURCE_DIR) + "/configs/tiny_alpaca_llama3.toml" +
                             " tokenizer.path=" + fixtures +
                             "/tokenizers/llama3/tokenizer.json dataset.source=" + fixtures +
                             "/data/alpaca_tiny.json '~tokenizer.max_seq_len'";
  // The longest sample as `fthost data --json` lists them, one JSON object per sample.
  const auto data = fttest::run_command_stdout(std::string(FTHOST_BINARY) + " data --json " + config + " 2>/dev/null");
  ASSERT_EQ(data.exit_code, 0) << data.output;
  std::size_t longest = 0, samples = 0;
  std::istringstream lines(data.output);
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (!j.contains("sample")) continue;
    ++samples;
    longest = std::max(longest, j["tokens"].size());
  }
  ASSERT_EQ(samples, 100u);
  const auto plan = plan_json(config + " --seq-len data", 0);
  EXPECT_EQ(plan["batch"]["seq_len"].get<std::size_t>(), longest);
  EXPECT_EQ(plan["batch"]["seq_len_source"], "the longest of the dataset's 100 samples");
  fttest::expect_refused("plan " + config + " --seq-len many", {"--seq-len many: expected a number of tokens"});
}

TEST(PlanCommand, BadInputGetsTheRunsErrors) {
  fttest::expect_refused("plan --config llama3/8B_full --device h900",
                         {"--device h900: no datasheet for it; known: h100-pcie", "a10g"});
  fttest::expect_refused(
      "plan --config llama3/8B_full --nproc-per-node 8 tensor_parallel_dim=3 "
      "tensor_parallel_plan._component_=torchtune.models.llama3.base_llama_tp_plan",
      {"tensor_parallel_dim", "3 does not divide the 8 ranks"});
  fttest::expect_refused("plan --config llama3/8B_full --device-memory 80XB", {"--device-memory 80XB: unknown unit"});
  fttest::expect_refused("validate --config llama3/8B_full --device h100", {"--device is an option of `fthost plan`"});
  fttest::expect_refused("plan --config llama3/8B_full --master-addr 10.0.0.1",
                         {"--master-addr starts ranks; `fthost plan` starts none"});
  // A key the schema does not know: the words `fthost validate` uses.
  const auto validate = fttest::run_fthost("validate --config llama3/8B_full batch_sise=4");
  const auto plan = fttest::run_fthost("plan --config llama3/8B_full batch_sise=4");
  EXPECT_NE(validate.exit_code, 0);
  EXPECT_NE(plan.exit_code, 0);
  const auto reason = validate.output.find("batch_sise");
  ASSERT_NE(reason, std::string::npos) << validate.output;
  EXPECT_NE(plan.output.find("batch_sise"), std::string::npos) << plan.output;
}

}  // namespace
