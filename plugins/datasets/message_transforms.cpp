#include "message_transforms.h"

#include <ft/errors.h>

namespace ft_ds {

using nlohmann::json;

std::string record_name(std::size_t record) { return "record " + std::to_string(record); }

const json& record_column(const json& sample, const std::string& name, std::size_t record) {
  auto it = sample.find(name);
  if (it == sample.end()) {
    std::string have;
    for (auto k = sample.begin(); k != sample.end(); ++k) have += (have.empty() ? "" : ", ") + k.key();
    throw ft::Error(record_name(record) + " has no column \"" + name + "\" (its columns: " + have +
                    "); set column_map to name the right one");
  }
  return *it;
}

namespace {

// By value: the default is the caller's `field`, often a temporary from a string literal, so a
// reference to it would dangle once the caller's expression ends.
std::string mapped(const ColumnMap& columns, const std::string& field) {
  auto it = columns.find(field);
  return it == columns.end() ? field : it->second;
}

class AlpacaToMessages final : public MessageTransform {
 public:
  AlpacaToMessages(ColumnMap columns, MaskingStrategy strategy) : columns_(std::move(columns)), strategy_(strategy) {}
  std::vector<ft::Message> operator()(const json& sample, std::size_t record) const override {
    const std::string instruction = text_column(sample, mapped(columns_, "instruction"), record);
    const std::string& input_key = mapped(columns_, "input");
    std::string input;
    if (auto it = sample.find(input_key); it != sample.end() && it->is_string()) input = it->get<std::string>();
    std::string prompt;
    if (!input.empty()) {
      prompt =
          "Below is an instruction that describes a task, paired with an input that provides further context. "
          "Write a response that appropriately completes the request.\n\n### Instruction:\n" +
          instruction + "\n\n### Input:\n" + input + "\n\n### Response:\n";
    } else {
      prompt =
          "Below is an instruction that describes a task. Write a response that appropriately completes the "
          "request.\n\n"
          "### Instruction:\n" +
          instruction + "\n\n### Response:\n";
    }
    std::vector<ft::Message> messages{{"user", prompt},
                                      {"assistant", text_column(sample, mapped(columns_, "output"), record)}};
    mask_messages(messages, strategy_);
    return messages;
  }

 private:
  ColumnMap columns_;
  MaskingStrategy strategy_;
};

class InputOutputToMessages final : public MessageTransform {
 public:
  InputOutputToMessages(ColumnMap columns, std::optional<std::string> system, MaskingStrategy strategy)
      : columns_(std::move(columns)), system_(std::move(system)), strategy_(strategy) {}
  std::vector<ft::Message> operator()(const json& sample, std::size_t record) const override {
    std::vector<ft::Message> messages;
    if (system_) messages.push_back({"system", *system_, true});
    messages.push_back({"user", text_column(sample, mapped(columns_, "input"), record)});
    messages.push_back({"assistant", text_column(sample, mapped(columns_, "output"), record)});
    mask_messages(messages, strategy_);
    return messages;
  }

 private:
  ColumnMap columns_;
  std::optional<std::string> system_;
  MaskingStrategy strategy_;
};

class ShareGptToMessages final : public MessageTransform {
 public:
  ShareGptToMessages(std::string column, std::optional<std::string> system, MaskingStrategy strategy)
      : column_(std::move(column)), system_(std::move(system)), strategy_(strategy) {}
  std::vector<ft::Message> operator()(const json& sample, std::size_t record) const override {
    const json& turns = record_column(sample, column_, record);
    if (!turns.is_array()) throw ft::Error(record_name(record) + ": column \"" + column_ + "\" is not a list of turns");
    std::vector<ft::Message> messages;
    if (system_) messages.push_back({"system", *system_, true});
    for (std::size_t i = 0; i < turns.size(); ++i) {
      const auto where = record_name(record) + ": " + column_ + "[" + std::to_string(i) + "]";
      if (!turns[i].is_object() || !turns[i].contains("from") || !turns[i].contains("value") ||
          !turns[i]["from"].is_string() || !turns[i]["value"].is_string())
        throw ft::Error(where + ": expected {\"from\": ..., \"value\": ...} (ShareGPT style)");
      const std::string from = turns[i]["from"].get<std::string>();
      std::string role;
      if (from == "system")
        role = "system";
      else if (from == "human")
        role = "user";
      else if (from == "gpt")
        role = "assistant";
      else
        throw ft::Error(where + ": unknown \"from\": \"" + from + "\" (expected system, human or gpt)");
      if (role == "system" && system_) continue;
      messages.push_back({role, turns[i]["value"].get<std::string>()});
    }
    mask_messages(messages, strategy_);
    return messages;
  }

 private:
  std::string column_;
  std::optional<std::string> system_;
  MaskingStrategy strategy_;
};

class OpenAiToMessages final : public MessageTransform {
 public:
  OpenAiToMessages(std::string column, std::optional<std::string> system, MaskingStrategy strategy)
      : column_(std::move(column)), system_(std::move(system)), strategy_(strategy) {}
  std::vector<ft::Message> operator()(const json& sample, std::size_t record) const override {
    const json& turns = record_column(sample, column_, record);
    if (!turns.is_array())
      throw ft::Error(record_name(record) + ": column \"" + column_ + "\" is not a list of messages");
    std::vector<ft::Message> messages;
    if (system_) messages.push_back({"system", *system_, true});
    for (std::size_t i = 0; i < turns.size(); ++i) {
      const auto where = record_name(record) + ": " + column_ + "[" + std::to_string(i) + "]";
      const json& t = turns[i];
      if (!t.is_object() || !t.contains("role") || !t["role"].is_string() || !t.contains("content"))
        throw ft::Error(where + ": expected {\"role\": ..., \"content\": ...} (OpenAI style)");
      const std::string role = t["role"].get<std::string>();
      if (role == "system" && system_) continue;
      std::string content;
      if (t["content"].is_string()) {
        content = t["content"].get<std::string>();
      } else if (t["content"].is_array()) {
        for (const auto& part : t["content"]) {
          if (part.value("type", "") != "text" || !part.contains("text"))
            throw ft::Error(where + ": only text content parts are supported, got " + part.dump());
          content += part["text"].get<std::string>();
        }
      } else {
        throw ft::Error(where + ": content must be a string or a list of {\"type\": \"text\", \"text\": ...}");
      }
      bool eot = true;
      if (role == "tool" || role == "ipython")
        eot = false;
      else if (role == "assistant" && i + 1 < turns.size()) {
        const std::string next = turns[i + 1].value("role", "");
        if (next == "tool" || next == "ipython") eot = false;
      }
      messages.push_back({role, content, false, false, eot});
    }
    mask_messages(messages, strategy_);
    return messages;
  }

 private:
  std::string column_;
  std::optional<std::string> system_;
  MaskingStrategy strategy_;
};

}  // namespace

std::string text_column(const json& sample, const std::string& name, std::size_t record) {
  const json& v = record_column(sample, name, record);
  if (!v.is_string())
    throw ft::Error(record_name(record) + ": column \"" + name + "\" is not text: " + v.dump().substr(0, 80));
  return v.get<std::string>();
}

MaskingStrategy masking_strategy(const ft::ConfigNode& cfg, MaskingStrategy fallback) {
  if (auto s = cfg.get_optional<std::string>("masking_strategy")) {
    if (*s == "train_on_all") return MaskingStrategy::TrainOnAll;
    if (*s == "train_on_assistant") return MaskingStrategy::TrainOnAssistant;
    if (*s == "train_on_last") return MaskingStrategy::TrainOnLast;
    cfg.fail("masking_strategy", "expected train_on_all, train_on_assistant or train_on_last, got \"" + *s + "\"");
  }
  if (auto t = cfg.get_optional<bool>("train_on_input"))
    return *t ? MaskingStrategy::TrainOnAll : MaskingStrategy::TrainOnAssistant;
  return fallback;
}

void mask_messages(std::vector<ft::Message>& messages, MaskingStrategy strategy) {
  bool marked_last = false;
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    auto& m = *it;
    if (m.role == "system") {
      m.masked = true;
      continue;
    }
    switch (strategy) {
      case MaskingStrategy::TrainOnLast:
        m.masked = !(m.role == "assistant" && !marked_last);
        if (m.role == "assistant") marked_last = true;
        break;
      case MaskingStrategy::TrainOnAll: m.masked = false; break;
      case MaskingStrategy::TrainOnAssistant: m.masked = m.role != "assistant"; break;
    }
  }
}

void validate_messages(const std::vector<ft::Message>& messages, std::size_t record) {
  const auto where = record_name(record) + ": ";
  if (messages.size() < 2)
    throw ft::Error(where + "a conversation needs at least 2 messages, got " + std::to_string(messages.size()));
  ft::Message last{"assistant", ""};
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    const auto at = " at index " + std::to_string(i);
    if (m.role == "assistant" && last.role != "user" && last.role != "tool" && last.role != "ipython")
      throw ft::Error(where + "assistant message" + at + " does not follow a user, tool or ipython message");
    if (m.role == "user" && last.role == "user") throw ft::Error(where + "two consecutive user messages" + at);
    if (m.role == "system" && i > 0)
      throw ft::Error(where + "system message" + at + ", but system messages must come first");
    if ((m.role == "tool" || m.role == "ipython") && !last.ipython)
      throw ft::Error(where + "tool or ipython message" + at + " must follow an ipython message");
    last = m;
  }
}

ColumnMap column_map(const ft::ConfigNode& cfg) {
  ColumnMap map;
  if (!cfg.has("column_map")) return map;
  const auto table = cfg.table("column_map");
  for (const auto& k : table.keys()) map[k] = table.get<std::string>(k);
  return map;
}

std::unique_ptr<MessageTransform> alpaca_to_messages(ColumnMap columns, MaskingStrategy strategy) {
  return std::make_unique<AlpacaToMessages>(std::move(columns), strategy);
}
std::unique_ptr<MessageTransform> input_output_to_messages(ColumnMap columns, std::optional<std::string> system,
                                                           MaskingStrategy strategy) {
  return std::make_unique<InputOutputToMessages>(std::move(columns), std::move(system), strategy);
}
std::unique_ptr<MessageTransform> sharegpt_to_messages(std::string column, std::optional<std::string> system,
                                                       MaskingStrategy strategy) {
  return std::make_unique<ShareGptToMessages>(std::move(column), std::move(system), strategy);
}
std::unique_ptr<MessageTransform> openai_to_messages(std::string column, std::optional<std::string> system,
                                                     MaskingStrategy strategy) {
  return std::make_unique<OpenAiToMessages>(std::move(column), std::move(system), strategy);
}

}  // namespace ft_ds
