// Values spelled as Python's str() spells them: what torchtune's MLflow and Comet loggers send
// for the run configuration (str() of each flattened leaf) and what MLflow's file store writes
// for a metric (str() of the float).
#pragma once

#include <string>
#include <vector>

namespace ft_loggers {

// repr(float): the shortest text that reads back to `value`, with ".0" on integral values,
// exponent form below 1e-4 and from 1e16 ("1e-05", "1e+16"), and "inf", "-inf", "nan".
std::string python_float_str(double value);

// repr(str): single-quoted unless the text holds ' and no ", with Python's escapes.
std::string python_string_repr(const std::string& text);

// "[a, b]" from the items' reprs.
std::string python_list_repr(const std::vector<std::string>& item_reprs);

}  // namespace ft_loggers
