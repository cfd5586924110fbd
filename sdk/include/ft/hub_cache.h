// Hugging Face Hub datasets already in the local cache, found as huggingface_hub lays the cache
// out after `hf download NAME --repo-type dataset`: nothing is downloaded.
#pragma once

#include <ft/export.h>

#include <string>

namespace ft {

// The snapshot directory of dataset repo `name` ("org/name") at `revision` (a branch or tag
// under refs/, or a commit): <cache>/datasets--org--name/snapshots/<commit>. The cache is
// HF_HUB_CACHE, else HF_HOME/hub, else XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub. Throws ft::Error naming the places looked in and the command that
// downloads the dataset.
FT_API std::string hub_dataset_snapshot(const std::string& name, const std::string& revision);

// Whether `source` reads as a Hub repo id ("org/name" or "name") rather than a local path.
FT_API bool looks_like_hub_name(const std::string& source);

}  // namespace ft
