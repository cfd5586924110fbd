// The memory plan against what a run measures, with Llama 4's images: a Llama 4 whose vision tower
// holds a large share of the peak (6 layers of width 768, MLP 3072, over 336-pixel tiles; the
// test's tiny mixture-of-experts decoder; random initialisation, every part trained) trains two
// steps of 2 samples of The Cauldron's records through llama4_transform (up to 4 tiles and a
// thumbnail an image) on one rank, and logs its plan for the batches it trained (their real
// tiles: the tower skips padding) beside the process's peak resident set; fp32 and bf16 agree
// within 15%. The plan of the same run must put at least a fifth of its peak in the images'
// activations, or the agreement would not depend on them.
#include "build_tree.h"
#include "plan_calibration.h"
#include "published_tokenizers.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace {

namespace calibration = fttest::plan_calibration;

// The training test's tiny Llama 4 config.json, its vision tower widened.
void write_model_config(const std::string& dir) {
  std::ifstream in(fttest::build_tree("vision_references/llama4_trainable/config.json"));
  nlohmann::json c = nlohmann::json::parse(in);
  c["torch_dtype"] = "float32";
  c["vision_config"].update({{"image_size", 336},
                             {"hidden_size", 768},
                             {"num_attention_heads", 12},
                             {"num_hidden_layers", 6},
                             {"intermediate_size", 3072},
                             {"projector_input_dim", 768},
                             {"projector_output_dim", 768},
                             {"vision_output_dim", 768}});
  std::ofstream(dir + "/config.json") << c.dump(1);
}

std::string run_config(const std::string& model_dir, const std::string& out) {
  return "output_dir = \"" + out +
         "\"\nseed = 0\nepochs = 1\nmax_steps_per_epoch = 2\nbatch_size = 2\nshuffle = false\ndtype = \"fp32\"\n"
         "device = \"cpu\"\nnum_threads = 1\ncollate_fn = \"torchtune.data.padded_collate_tiled_images_and_mask\"\n\n"
         "[model]\n_component_ = \"fthost.models.llama4.from_hf_config\"\npath = \"" +
         model_dir +
         "\"\nencoder_trainable = true\n\n"
         "[tokenizer]\n_component_ = \"torchtune.models.llama4.llama4_transform\"\npath = \"" +
         fttest::published::file("llama4", "tokenizer.model") +
         "\"\nmax_seq_len = 4096\nimage_size = 336\nmax_num_tiles = 4\n\n"
         "[checkpointer]\n_component_ = \"torchtune.training.FullModelHFCheckpointer\"\ncheckpoint_dir = \"\"\n"
         "model_type = \"LLAMA4\"\noutput_dir = \"" +
         out +
         "\"\n\n[dataset]\n_component_ = \"torchtune.datasets.multimodal.the_cauldron_dataset\"\n"
         "source = \"parquet\"\ndata_files = \"" +
         fttest::build_tree("vision_references/llama4_data/cauldron.parquet") +
         "\"\n\n[loss]\n_component_ = \"torchtune.modules.loss.CEWithChunkedOutputLoss\"\n\n"
         "[optimizer]\n_component_ = \"torch.optim.AdamW\"\nlr = 1e-4\n\n"
         "[metric_logger]\n_component_ = \"torchtune.training.metric_logging.StdoutLogger\"\n";
}

using Llama4PlanCalibration = calibration::WrittenRunCalibration<write_model_config, run_config>;

// The second step's batch: 2 samples, the longer 602 tokens, 5 real tiles (4 + a thumbnail, and 1).
TEST_F(Llama4PlanCalibration, TheImagesAreAFifthOfThePlannedPeak) {
  calibration::expect_images_a_fifth_of_the_plan("--config " + config_ + " --seq-len 602 --tiles-per-image 3");
}

TEST_F(Llama4PlanCalibration, Float32AndBfloat16) {
  expect_calibrated("fp32", "");
  expect_calibrated("bf16", "dtype=bf16");
}

}  // namespace
