// The size of an autograd graph, for tests that check what activation checkpointing keeps.
#pragma once

#include <ft/torch_compat.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace fttest {

// Every node reachable from `root`, counted once; their names go to `names` when given.
inline std::size_t graph_size(const ft::compat::AutogradNodePtr& root, std::set<std::string>* names = nullptr) {
  std::set<torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> todo{root.get()};
  while (!todo.empty()) {
    torch::autograd::Node* node = todo.back();
    todo.pop_back();
    if (!node || !seen.insert(node).second) continue;
    if (names) names->insert(node->name());
    for (const auto& edge : node->next_edges()) todo.push_back(edge.function.get());
  }
  return seen.size();
}

}  // namespace fttest
