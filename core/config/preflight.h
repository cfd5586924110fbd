// The pre-flight check: before any model, optimizer or process group is built, every path the
// configuration names is resolved and checked, and every problem is reported at once, each with
// where the config named it (file:line: table.key). What a key names comes from its schema's
// PathRole (ft/schema.h), so a third party's component is checked as the shipped ones are,
// from its manifest, without loading its plugin or LibTorch. docs/preflight.md.
#pragma once

#include "config/training_settings.h"

#include <ft/config.h>
#include <ft/registry.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fthost {

struct PreflightReport {
  std::vector<std::string> problems;  // `<origin>: <table.key>: <message>`, one line each
  // One checkpoint's estimated size (weights and optimizer state at the training dtype), from the
  // checkpointer's input files; unset when they are not known.
  std::optional<std::uint64_t> checkpoint_bytes;
};

// Checks what `root` (schema-checked, defaults filled) names on disk: input files and
// directories, checkpoint files, dataset sources (the Hugging Face cache included), a resumed
// checkpoint, and that the checkpoint directory is writable with room for one checkpoint.
PreflightReport preflight(const ft::Registry& registry, const ft::ConfigNode& root, const TrainingSettings& settings);

// The report as one message: "N problem(s) with the files the configuration names:" and a line
// each.
std::string preflight_message(const PreflightReport& report);

}  // namespace fthost
