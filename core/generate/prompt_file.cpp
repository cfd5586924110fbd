#include "generate/prompt_file.h"

#include <ft/errors.h>

#include <nlohmann/json.hpp>

#include <fstream>

namespace fthost {

namespace {

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

std::vector<std::int64_t> id_list(const nlohmann::json& j, const std::string& where) {
  if (!j.is_array() || j.empty()) throw ft::Error(where + ": expected a non-empty list of token ids");
  std::vector<std::int64_t> ids;
  for (const auto& id : j) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0)
      throw ft::Error(where + ": expected token ids (non-negative integers), got " + id.dump());
    ids.push_back(id.get<std::int64_t>());
  }
  return ids;
}

std::vector<ft::Message> messages_of(const nlohmann::json& j, const std::string& where) {
  if (!j.is_array() || j.empty()) throw ft::Error(where + ": \"messages\" must be a non-empty list");
  std::vector<ft::Message> messages;
  for (const auto& m : j) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string())
      throw ft::Error(where + ": each message must be {\"role\": \"...\", \"content\": \"...\"}, got " + m.dump());
    ft::Message message;
    message.role = m["role"].get<std::string>();
    message.content = m["content"].get<std::string>();
    messages.push_back(std::move(message));
  }
  if (messages.back().role == "assistant")
    throw ft::Error(where + ": the last message is the assistant's; end with the turn the model answers");
  return messages;
}

}  // namespace

std::string ids_text(const std::vector<std::int64_t>& ids) {
  std::string out;
  for (std::int64_t id : ids) out += (out.empty() ? "" : " ") + std::to_string(id);
  return out;
}

std::vector<std::int64_t> text_prompt_tokens(const ft::Tokenizer* tokenizer, const std::string& text, bool chat) {
  if (!tokenizer)
    throw ft::Error(
        "a text prompt needs a tokenizer, and there is none: the model directory has no tokenizer.json or "
        "tokenizer.model, and no --config names a [tokenizer]; give the prompt as token ids ({\"tokens\": [...]} "
        "lines of --prompts)");
  if (!chat) return tokenizer->encode(text, /*add_bos=*/tokenizer->bos_id() >= 0, /*add_eos=*/false);
  ft::Message user;
  user.role = "user";
  user.content = text;
  return conversation_tokens(*tokenizer, {user});
}

std::vector<std::int64_t> conversation_tokens(const ft::Tokenizer& tokenizer, std::vector<ft::Message> messages) {
  ft::Message answer;
  answer.role = "assistant";  // empty and left open: the model writes it
  messages.push_back(answer);
  return tokenizer.tokenize_messages(messages, /*add_end_tokens=*/false).tokens;
}

std::vector<Prompt> read_prompt_file(const std::string& path, const ft::Tokenizer* tokenizer, bool chat) {
  std::ifstream in(path);
  if (!in) throw ft::Error("--prompts: cannot read " + path);
  std::vector<Prompt> prompts;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (trimmed(line).empty()) continue;
    const std::string where = path + ":" + std::to_string(number);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw ft::Error(where + ": not valid JSON: " + e.what());
    }
    if (!j.is_object()) throw ft::Error(where + ": expected a JSON object");
    const int forms = int(j.contains("prompt")) + int(j.contains("messages")) + int(j.contains("tokens"));
    if (forms != 1)
      throw ft::Error(where +
                      ": expected exactly one of \"prompt\" (text), \"messages\" (a conversation) or "
                      "\"tokens\" (ids)");
    Prompt p;
    try {
      if (j.contains("tokens")) {
        p.tokens = id_list(j["tokens"], where + ": \"tokens\"");
        p.shown = ids_text(p.tokens);
      } else if (j.contains("prompt")) {
        if (!j["prompt"].is_string()) throw ft::Error(where + ": \"prompt\" must be a string");
        p.shown = j["prompt"].get<std::string>();
        p.tokens = text_prompt_tokens(tokenizer, p.shown, chat);
      } else {
        const std::vector<ft::Message> messages = messages_of(j["messages"], where);
        if (!tokenizer) text_prompt_tokens(tokenizer, "", true);  // the error: no tokenizer
        p.shown = messages.back().content;
        p.tokens = conversation_tokens(*tokenizer, messages);
      }
    } catch (const ft::Error& e) {
      const std::string message = e.what();
      throw ft::Error(message.rfind(where, 0) == 0 ? message : where + ": " + message);
    }
    if (j.contains("expected")) {
      if (j["expected"].is_string()) {
        if (!tokenizer) throw ft::Error(where + ": an expected text needs a tokenizer; give the expected token ids");
        p.expected_text = j["expected"].get<std::string>();
      } else {
        p.expected_tokens = id_list(j["expected"], where + ": \"expected\"");
      }
    }
    prompts.push_back(std::move(p));
  }
  if (prompts.empty()) throw ft::Error("--prompts: " + path + " holds no prompts");
  return prompts;
}

std::optional<bool> answer_matches(const Prompt& prompt, const std::vector<std::int64_t>& answer,
                                   const ft::Tokenizer* tokenizer) {
  if (prompt.expected_tokens) return *prompt.expected_tokens == answer;
  if (prompt.expected_text) {
    if (!tokenizer) throw ft::Error("an expected text answer needs a tokenizer to decode the model's answer");
    return trimmed(*prompt.expected_text) == trimmed(tokenizer->decode(answer));
  }
  return std::nullopt;
}

}  // namespace fthost
