// torchtune's message transforms: one dataset record -> a conversation (ft::Message list) with
// each message's `masked` flag set by the masking strategy. The tokenizer renders it.
#pragma once

#include <ft/config.h>
#include <ft/tokenizer.h>

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ft_ds {

enum class MaskingStrategy { TrainOnAll, TrainOnAssistant, TrainOnLast };

// From `masking_strategy` if set, else `train_on_input` (true: train_on_all, false:
// train_on_assistant), else `fallback`, as torchtune resolves the two keys.
MaskingStrategy masking_strategy(const ft::ConfigNode& cfg, MaskingStrategy fallback);

// torchtune's mask_messages: system messages are always masked.
void mask_messages(std::vector<ft::Message>& messages, MaskingStrategy strategy);

// torchtune's validate_messages: at least two messages, roles in a valid order.
void validate_messages(const std::vector<ft::Message>& messages, std::size_t record);

class MessageTransform {
 public:
  virtual ~MessageTransform() = default;
  // `record` is the record's index, quoted in errors.
  virtual std::vector<ft::Message> operator()(const nlohmann::json& sample, std::size_t record) const = 0;
};

// The column a logical field is read from: column_map[field], else the field's own name.
using ColumnMap = std::map<std::string, std::string>;
ColumnMap column_map(const ft::ConfigNode& cfg);

// Alpaca's prompt template around instruction (+ input); the output is the assistant turn.
std::unique_ptr<MessageTransform> alpaca_to_messages(ColumnMap columns, MaskingStrategy strategy);
// `input` is the user turn, `output` the assistant turn (torchtune's InputOutputToMessages).
std::unique_ptr<MessageTransform> input_output_to_messages(ColumnMap columns,
                                                           std::optional<std::string> new_system_prompt,
                                                           MaskingStrategy strategy);
// ShareGPT: [{"from": "system"|"human"|"gpt", "value": ...}] under `column`.
std::unique_ptr<MessageTransform> sharegpt_to_messages(std::string column, std::optional<std::string> new_system_prompt,
                                                       MaskingStrategy strategy);
// OpenAI: [{"role": ..., "content": str or [{"type": "text", "text": ...}]}] under `column`.
std::unique_ptr<MessageTransform> openai_to_messages(std::string column, std::optional<std::string> new_system_prompt,
                                                     MaskingStrategy strategy);

// "record 7": how errors name a record.
std::string record_name(std::size_t record);
// sample[column]; throws naming the record, the column and the columns it has when absent.
const nlohmann::json& record_column(const nlohmann::json& sample, const std::string& column, std::size_t record);
// The string in sample[column]; throws naming the record and column when absent or not text.
std::string text_column(const nlohmann::json& sample, const std::string& column, std::size_t record);

}  // namespace ft_ds
