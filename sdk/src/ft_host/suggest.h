// "Did you mean ...?" for unknown keys and component names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ft::detail {

// Candidates within a small edit distance of `word`, closest first (at most `limit`).
std::vector<std::string> close_matches(std::string_view word, const std::vector<std::string>& candidates,
                                       std::size_t limit = 3);

}  // namespace ft::detail
