#include <ft/hub_cache.h>

#include <ft/errors.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <vector>

namespace ft {

namespace {

namespace fs = std::filesystem;

struct CacheLocation {
  fs::path dir;
  std::string chosen_by;  // which variable (or default) chose it, for messages
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

CacheLocation hub_cache() {
  if (const auto v = env("HF_HUB_CACHE"); !v.empty()) return {v, "HF_HUB_CACHE"};
  if (const auto v = env("HF_HOME"); !v.empty()) return {fs::path(v) / "hub", "HF_HOME/hub"};
  if (const auto v = env("XDG_CACHE_HOME"); !v.empty())
    return {fs::path(v) / "huggingface" / "hub", "XDG_CACHE_HOME/huggingface/hub"};
  return {fs::path(env("HOME")) / ".cache" / "huggingface" / "hub",
          "the default ~/.cache/huggingface/hub (HF_HUB_CACHE and HF_HOME unset)"};
}

std::string download_hint(const std::string& name, const std::string& revision) {
  return "download it once, where the cache is, with\n  hf download " + name + " --repo-type dataset" +
         (revision == "main" ? "" : " --revision " + revision) +
         "\n(huggingface_hub's older spelling: huggingface-cli download " + name + " --repo-type dataset)";
}

std::string read_ref(const fs::path& path) {
  std::ifstream in(path);
  std::string commit;
  in >> commit;
  return commit;
}

}  // namespace

bool looks_like_hub_name(const std::string& source) {
  static const std::regex repo_id(R"([A-Za-z0-9][A-Za-z0-9_.\-]*(/[A-Za-z0-9][A-Za-z0-9_.\-]*)?)");
  return std::regex_match(source, repo_id) && source.find("..") == std::string::npos;
}

std::string hub_dataset_snapshot(const std::string& name, const std::string& revision) {
  const CacheLocation cache = hub_cache();
  std::string folder = "datasets--" + name;
  for (std::size_t at = folder.find('/'); at != std::string::npos; at = folder.find('/', at))
    folder.replace(at, 1, "--");
  const fs::path repo = cache.dir / folder;
  if (!fs::is_directory(repo))
    throw ft::Error("source = \"" + name + "\": this Hugging Face Hub dataset is not in the local cache (looked for " +
                    repo.string() + "; the cache is " + cache.chosen_by + "), and fthost does not download. Either " +
                    download_hint(name, revision) + "\nor name a local file or directory in source");
  const bool is_commit = std::regex_match(revision, std::regex("[0-9a-f]{40}"));
  std::string commit = revision;
  if (!is_commit) {
    const fs::path ref = repo / "refs" / revision;
    commit = fs::is_regular_file(ref) ? read_ref(ref) : "";
    if (commit.empty()) {
      std::vector<std::string> refs;
      if (fs::is_directory(repo / "refs"))
        for (const auto& e : fs::recursive_directory_iterator(repo / "refs"))
          if (e.is_regular_file()) refs.push_back(e.path().lexically_relative(repo / "refs").string());
      std::sort(refs.begin(), refs.end());
      std::string known;
      for (const auto& r : refs) known += (known.empty() ? "" : ", ") + r;
      throw ft::Error("source = \"" + name + "\": the cache at " + repo.string() + " has no revision \"" + revision +
                      "\" (" + (known.empty() ? "no refs" : "refs: " + known) + "); " + download_hint(name, revision));
    }
  }
  const fs::path snapshot = repo / "snapshots" / commit;
  if (!fs::is_directory(snapshot))
    throw ft::Error("source = \"" + name + "\": revision \"" + revision + "\" is commit " + commit + ", but " +
                    snapshot.string() + " does not exist (an interrupted download?); " + download_hint(name, revision));
  return snapshot.string();
}

}  // namespace ft
