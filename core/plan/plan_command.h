// `fthost plan`: a run's per-rank budget before it runs (docs/plan.md), as text or --json.
#pragma once

#include "config/invocation.h"

namespace fthost {

// 0 when the plan fits its device (or no budget is known), 1 when it does not.
int run_plan_command(const Invocation& inv);

}  // namespace fthost
