// Headers precompiled once for every in-tree target that uses LibTorch.
#pragma once
#include <torch/torch.h>

#include <spdlog/spdlog.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
