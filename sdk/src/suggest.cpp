#include "ft_host/suggest.h"

#include <algorithm>
#include <cctype>

namespace ft::detail {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const bool same =
          std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string_view last_segment(std::string_view s) {
  auto dot = s.rfind('.');
  return dot == std::string_view::npos ? s : s.substr(dot + 1);
}

}  // namespace

std::vector<std::string> close_matches(std::string_view word, const std::vector<std::string>& candidates,
                                       std::size_t limit) {
  // Dotted component names differ mostly in their last segment; compare that too.
  const std::size_t budget = std::max<std::size_t>(2, last_segment(word).size() / 3);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& c : candidates) {
    std::size_t d = std::min(edit_distance(word, c),
                             edit_distance(last_segment(word), last_segment(c)) + (last_segment(word) == word ? 0 : 1));
    if (d <= budget) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(), [](auto& x, auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (auto& s : scored) {
    if (out.size() == limit) break;
    out.push_back(s.second);
  }
  return out;
}

}  // namespace ft::detail
