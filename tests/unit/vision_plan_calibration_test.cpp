// The memory plan against what a run measures, with images: a Llama 3.2 Vision sized so that its
// image encoder holds a large share of the peak (3 local and 2 global layers of width 512, MLP
// 2048, over 224-pixel tiles, 4 an image; a text model of width 256 with 2 cross-attention layers
// and Llama 3's vocabulary; random initialisation) trains two steps of 2 samples of the golden's
// multimodal records (one image each) on one rank, and logs its plan for the batches it trained
// beside the process's peak resident set; every layout agrees within 15%: torchtune's split
// (the language model frozen), activation checkpointing, a frozen encoder (its layers keep
// nothing: no gradient reaches them), and bfloat16. The plan of the same run must put at least a
// fifth of its peak in the images' activations, or the agreement would not depend on them.
#include "build_tree.h"
#include "plan_calibration.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace {

namespace calibration = fttest::plan_calibration;

std::string golden_dir() { return fttest::build_tree("vision_references/vision_golden"); }

// The golden's tiny Mllama config.json, widened.
void write_model_config(const std::string& dir) {
  std::ifstream in(golden_dir() + "/mllama_tiny/config.json");
  nlohmann::json c = nlohmann::json::parse(in);
  c["dtype"] = "float32";
  c["image_token_index"] = 128256;
  c["vision_config"].update({{"image_size", 224},
                             {"hidden_size", 512},
                             {"attention_heads", 8},
                             {"intermediate_size", 2048},
                             {"num_hidden_layers", 3},
                             {"num_global_layers", 2},
                             {"intermediate_layers_indices", {0, 2}},
                             {"max_num_tiles", 4},
                             {"vision_output_dim", 512 * 3}});
  c["text_config"].update({{"hidden_size", 256},
                           {"intermediate_size", 1024},
                           {"num_attention_heads", 4},
                           {"num_key_value_heads", 2},
                           {"vocab_size", 128256},
                           {"cross_attention_layers", {1, 3}},
                           {"num_hidden_layers", 5}});
  std::ofstream(dir + "/config.json") << c.dump(1);
}

std::string run_config(const std::string& model_dir, const std::string& out) {
  const std::string g = golden_dir();
  return "output_dir = \"" + out +
         "\"\nseed = 0\nepochs = 1\nmax_steps_per_epoch = 2\nbatch_size = 2\nshuffle = false\ndtype = \"fp32\"\n"
         "device = \"cpu\"\nnum_threads = 1\ncollate_fn = \"torchtune.data.padded_collate_tiled_images_and_mask\"\n\n"
         "[model]\n_component_ = \"fthost.models.llama3_2_vision.from_hf_config\"\npath = \"" +
         model_dir +
         "\"\ndecoder_trainable = false\nencoder_trainable = true\nfusion_trainable = true\n\n"
         "[tokenizer]\n_component_ = \"torchtune.models.llama3_2_vision.llama3_2_vision_transform\"\npath = \"" +
         fttest::fixtures_dir() +
         "/torchtune_assets/tiktoken_small.model\"\nmax_seq_len = 256\nimage_size = 224\n\n"
         "[checkpointer]\n_component_ = \"torchtune.training.FullModelHFCheckpointer\"\ncheckpoint_dir = \"\"\n"
         "model_type = \"LLAMA3_VISION\"\noutput_dir = \"" +
         out +
         "\"\n\n[dataset]\n_component_ = \"torchtune.datasets.multimodal.multimodal_chat_dataset\"\n"
         "source = \"json\"\ndata_files = \"" +
         g + "/data.json\"\nimage_dir = \"" + g +
         "/images\"\nimage_tag = \"<image>\"\n\n"
         "[loss]\n_component_ = \"torchtune.modules.loss.CEWithChunkedOutputLoss\"\n\n"
         "[optimizer]\n_component_ = \"torch.optim.AdamW\"\nlr = 1e-4\n\n"
         "[metric_logger]\n_component_ = \"torchtune.training.metric_logging.StdoutLogger\"\n";
}

using VisionPlanCalibration = calibration::WrittenRunCalibration<write_model_config, run_config>;

TEST_F(VisionPlanCalibration, TheImagesAreAFifthOfThePlannedPeak) {
  calibration::expect_images_a_fifth_of_the_plan("--config " + config_ + " --seq-len 48");
}

TEST_F(VisionPlanCalibration, TorchtunesSplitAndCheckpointing) {
  expect_calibrated("fp32", "");
  expect_calibrated("checkpointed", "enable_activation_checkpointing=true");
}

TEST_F(VisionPlanCalibration, FrozenEncoderAndBfloat16) {
  expect_calibrated("frozen_encoder", "model.encoder_trainable=false");
  expect_calibrated("bf16", "dtype=bf16");
}

}  // namespace
