// ft_logger_disk (torchtune.training.metric_logging.DiskLogger) through the registry: the text
// and JSONL lines are compared with the exact format torchtune's DiskLogger writes
// ("Step N | key:value ..." per log call, and one JSON object per step).
#include "builtin_plugins.h"

#include <ft/metric_logger.h>

namespace {

class DiskLogger : public fttest::BuiltinPluginsTest {};

TEST_F(DiskLogger, DiskLoggerWritesTorchtuneTextAndJsonl) {
  const std::string dir = fttest::temp_dir();
  for (std::string fmt : {"txt", "jsonl"}) {
    auto cfg = root("[metric_logger]\n_component_ = \"torchtune.training.metric_logging.DiskLogger\"\nlog_dir = \"" +
                    dir + "\"\nfilename = \"m." + fmt + "\"\noutput_fmt = \"" + fmt + "\"\n");
    auto logger = registry().instantiate<ft::MetricLogger>(cfg.table("metric_logger"));
    logger->log_dict({{"loss", 0.5}, {"lr", 2e-05}}, 1);
    logger->log("tokens_per_second", 12.0, 2);
    EXPECT_EQ(logger->close(0), std::nullopt);
    const std::string text = fttest::read_file(dir + "/m." + fmt);
    if (fmt == "txt")
      EXPECT_EQ(text, "Step 1 | loss:0.5 lr:2e-05 \nStep 2 | tokens_per_second:12 \n");
    else
      EXPECT_EQ(text, "{\"step\": 1, \"loss\": 0.5, \"lr\": 2e-05}\n{\"step\": 2, \"tokens_per_second\": 12}\n");
  }
}

}  // namespace
