// Comet's offline experiment, as comet_ml's OfflineExperiment writes it: a staging directory
// holding experiment.json (the experiment's key, project, workspace, tags, times and resume
// strategy) and messages.json (one JSON message a line: log_other, parameter_msg, metric_msg,
// file_upload), zipped at the end into <offline_directory>/<experiment key>.zip, which
// `comet upload` sends. Each message line is written whole as it is logged, and experiment.json
// is kept current, so a killed run leaves a staging directory that zips into an uploadable archive.
#pragma once

#include "append_only_file.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ft_comet {

struct ExperimentInfo {
  std::string experiment_key;  // 32 to 50 alphanumeric characters
  std::string project;         // "" for comet's default
  std::string workspace;       // "" for comet's default
  std::vector<std::string> tags;
  std::string resume_strategy;  // get_or_create, get or create
  bool user_provided_key = false;
  std::int64_t start_time_ms = 0;
};

class OfflineArchive {
 public:
  // Starts the staging directory <offline_directory>/.<experiment key>.partial; throws ft::Error
  // naming it when it cannot be made.
  OfflineArchive(const std::string& offline_directory, ExperimentInfo info);

  // Appends one message (its payload gets the next message_id).
  void add(const std::string& type, nlohmann::ordered_json payload);
  // Stores `content` in the archive as an asset named `file_name`.
  void add_asset(const std::string& file_name, const std::string& content, std::int64_t step);

  // Writes experiment.json with the stop time and zips the staging directory into the archive;
  // returns the archive's path. Throws ft::Error naming the file that could not be written.
  std::string finish(std::int64_t stop_time_ms);

  const std::string& staging_dir() const { return staging_dir_; }

 private:
  void write_experiment_json(std::int64_t stop_time_ms) const;

  std::string offline_directory_;
  ExperimentInfo info_;
  std::string staging_dir_;
  ft_loggers::AppendOnlyFile messages_;
  std::int64_t next_message_id_ = 1;
};

}  // namespace ft_comet
