// `fthost data`: the dataset and collate built exactly as the recipe builds them, shown as the
// model sees them — decoded text with the trained-on and the masked (ignored) tokens told
// apart, token counts, and statistics over the whole dataset (docs/data.md).
#pragma once

#include "config/invocation.h"
#include "config/training_settings.h"

#include "ft_host/config_document.h"

#include <ft/config.h>
#include <ft/registry.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace fthost {

// The command's stdout is the data view (or JSON for scripts): logging goes to stderr.
void log_to_stderr();

// `--packed`: packed = true in every `[dataset]` / `[[dataset]]` table, before the collate is
// chosen from it.
void set_datasets_packed(ft::detail::ConfigDocument& doc);

// The longest sample (or pack) of the training data as the run builds it, in tokens, and how
// many samples there are: what `fthost plan --seq-len data` plans for. Progress goes to stderr.
std::pair<std::int64_t, std::size_t> longest_training_sample(const ft::Registry& registry, const ft::ConfigNode& root,
                                                             const TrainingSettings& settings);

// Prints the view to stdout and progress to stderr; returns the exit code.
int show_data(const ft::Registry& registry, const ft::ConfigNode& root, const TrainingSettings& settings,
              const DataViewOptions& options);

}  // namespace fthost
