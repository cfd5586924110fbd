#include "comet_offline_archive.h"
#include "run_identity.h"

#include <ft/durable_files.h>
#include <ft/errors.h>

#include <fmt/format.h>
#include <zip.h>
#include <boost/filesystem.hpp>

#include <chrono>
#include <random>

namespace ft_comet {

namespace fs = boost::filesystem;
using Json = nlohmann::ordered_json;

namespace {

std::string random_hex(std::size_t length) {
  std::random_device seed;
  std::mt19937_64 rng((static_cast<std::uint64_t>(seed()) << 32) ^ seed());
  std::string out;
  while (out.size() < length) out += fmt::format("{:016x}", rng());
  return out.substr(0, length);
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json null_if_empty(const std::string& text) { return text.empty() ? Json(nullptr) : Json(text); }

// Zips every regular file of `dir` (flat, as comet_ml's archive is) into `archive`.
void zip_directory(const fs::path& dir, const std::string& archive) {
  int error = 0;
  zip_t* zip = zip_open(archive.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  if (!zip) {
    zip_error_t reason;
    zip_error_init_with_code(&reason, error);
    const std::string text = zip_error_strerror(&reason);
    zip_error_fini(&reason);
    throw ft::Error("CometLogger: " + archive + ": " + text);
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!fs::is_regular_file(entry.path())) continue;
    zip_source_t* source = zip_source_file(zip, entry.path().c_str(), 0, -1);  // -1: to the end (libzip 1.7)
    if (!source || zip_file_add(zip, entry.path().filename().c_str(), source, ZIP_FL_OVERWRITE) < 0) {
      if (source) zip_source_free(source);
      const std::string text = zip_strerror(zip);
      zip_discard(zip);
      throw ft::Error("CometLogger: " + archive + ": cannot add " + entry.path().string() + ": " + text);
    }
  }
  if (zip_close(zip) != 0) {
    const std::string text = zip_strerror(zip);
    zip_discard(zip);
    throw ft::Error("CometLogger: " + archive + ": " + text);
  }
}

}  // namespace

OfflineArchive::OfflineArchive(const std::string& offline_directory, ExperimentInfo info)
    : offline_directory_(offline_directory),
      info_(std::move(info)),
      staging_dir_([&] {
        const fs::path dir = fs::path(offline_directory) / ("." + info_.experiment_key + ".partial");
        try {
          fs::create_directories(dir);
        } catch (const fs::filesystem_error& e) {
          throw ft::Error(std::string("CometLogger: offline_directory: ") + e.what());
        }
        return dir.string();
      }()),
      messages_(staging_dir_ + "/messages.json", ft_loggers::AppendOnlyFile::IfExists::Append) {
  write_experiment_json(info_.start_time_ms);
}

void OfflineArchive::add(const std::string& type, Json payload) {
  payload["message_id"] = next_message_id_++;
  Json message;
  message["payload"] = std::move(payload);
  message["type"] = type;
  messages_.write(dump(message) + "\n");
}

void OfflineArchive::add_asset(const std::string& file_name, const std::string& content, std::int64_t step) {
  const std::string stored = "tmp" + random_hex(8);
  ft::write_text_file_atomically(staging_dir_ + "/" + stored, content);
  const auto dot = file_name.rfind('.');
  Json params;
  params["assetId"] = random_hex(32);
  params["context"] = nullptr;
  params["extension"] = dot == std::string::npos ? "" : file_name.substr(dot + 1);
  params["fileName"] = file_name;
  params["overwrite"] = false;
  params["runId"] = nullptr;
  params["step"] = step;
  Json payload;
  payload["additional_params"] = std::move(params);
  payload["clean"] = true;
  payload["file_path"] = stored;
  payload["local_timestamp"] = ft_loggers::unix_time_ms();
  payload["metadata"] = Json::object();
  payload["upload_type"] = "asset";
  add("file_upload", std::move(payload));
}

void OfflineArchive::write_experiment_json(std::int64_t stop_time_ms) const {
  Json meta;
  meta["offline_id"] = info_.experiment_key;
  meta["project_name"] = null_if_empty(info_.project);
  meta["start_time"] = info_.start_time_ms;
  meta["stop_time"] = stop_time_ms;
  meta["tags"] = info_.tags;
  meta["workspace"] = null_if_empty(info_.workspace);
  meta["resume_strategy"] = info_.resume_strategy;
  meta["customer_error_reported"] = false;
  meta["customer_error_message"] = nullptr;
  meta["user_provided_experiment_key"] = info_.user_provided_key;
  meta["comet_start_sourced"] = true;
  ft::write_text_file_atomically(staging_dir_ + "/experiment.json", dump(meta));
}

std::string OfflineArchive::finish(std::int64_t stop_time_ms) {
  messages_.close();
  write_experiment_json(stop_time_ms);
  fs::path archive = fs::path(offline_directory_) / (info_.experiment_key + ".zip");
  if (fs::exists(archive))  // another run of the same key: comet_ml adds a random suffix too
    archive = fs::path(offline_directory_) / (info_.experiment_key + "-" + random_hex(6) + ".zip");
  const std::string partial = archive.string() + ".partial";
  zip_directory(staging_dir_, partial);
  fs::rename(partial, archive);
  fs::remove_all(staging_dir_);
  return archive.string();
}

}  // namespace ft_comet
