// Shared by the logger tests: a metric logger built from its TOML table, and the files it wrote.
#pragma once

#include "builtin_plugins.h"
#include "test_helpers.h"

#include <ft/metric_logger.h>

#include <boost/filesystem.hpp>

#include <memory>
#include <string>
#include <vector>

namespace fttest {

inline std::shared_ptr<ft::MetricLogger> make_logger(const std::string& table_toml, ft::MetricLogger::Args args = {}) {
  return builtin_registry().instantiate<ft::MetricLogger>(
      config_root("[metric_logger]\n" + table_toml).table("metric_logger"), args);
}

// Regular files under `dir`, recursively, sorted.
inline std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> out;
  if (!boost::filesystem::exists(dir)) return out;
  for (auto it = boost::filesystem::recursive_directory_iterator(dir);
       it != boost::filesystem::recursive_directory_iterator(); ++it)
    if (boost::filesystem::is_regular_file(it->symlink_status())) out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace fttest
