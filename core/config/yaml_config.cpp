#include "config/yaml_config.h"

#include "config/omegaconf_scalars.h"

#include <ft/errors.h>
#include <ft/text.h>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <sstream>
#include <vector>

namespace fthost {

using ft::ConfigError;
using ft::detail::ConfigDocument;

bool is_yaml_path(const std::string& path) { return ft::ends_with(path, ".yaml") || ft::ends_with(path, ".yml"); }

namespace {

// As deep as the TOML reader and interpolation allow; each level is a stack frame here.
constexpr std::size_t kMaxDepth = 256;
// Aliases repeat a node wherever they point, so a few lines can name an exponential number of
// values; no real config comes near this many.
constexpr std::size_t kMaxValues = 100000;

const std::string kYamlTag = "tag:yaml.org,2002:";

class YamlToToml {
 public:
  explicit YamlToToml(std::string source) : source_(std::move(source)) {}

  toml::table root(const YAML::Node& node) {
    if (!node.IsDefined() || node.IsNull()) return {};
    if (!node.IsMap()) fail(node.Mark(), "", "the top level must be a mapping of keys to values");
    return table(node, "", 0);
  }

  const std::map<std::string, std::size_t>& lines() const { return lines_; }

 private:
  std::string source_;
  std::map<std::string, std::size_t> lines_;
  std::size_t values_ = 0;

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& path, const std::string& message) const {
    std::string where = source_;
    if (!mark.is_null()) where += ":" + std::to_string(mark.line + 1);
    throw ConfigError(where + ": " + (path.empty() ? "" : path + ": ") + message);
  }

  void count(const YAML::Node& node, const std::string& path, std::size_t depth) {
    if (++values_ > kMaxValues)
      fail(node.Mark(), path, "more than " + std::to_string(kMaxValues) + " values (through aliases?)");
    if (depth > kMaxDepth) fail(node.Mark(), path, "nests deeper than " + std::to_string(kMaxDepth) + " levels");
  }

  toml::table table(const YAML::Node& map, const std::string& path, std::size_t depth) {
    if (!map.Tag().empty() && map.Tag() != "?" && map.Tag() != kYamlTag + "map")
      fail(map.Mark(), path, "unsupported tag " + map.Tag() + " on a mapping");
    toml::table out;
    std::map<std::string, std::size_t> first_line;
    for (const auto& entry : map) {
      const YAML::Node& key_node = entry.first;
      if (!key_node.IsScalar()) fail(key_node.Mark(), path, "a key must be a plain name, not a list or mapping");
      const std::string key = key_node.Scalar();
      const std::size_t line = key_node.Mark().line + 1;
      const std::string child = path.empty() ? key : path + "." + key;
      if (key == "<<" && key_node.Tag() == "?")
        fail(key_node.Mark(), path, "YAML merge keys (<<) are not supported; write the keys out");
      if (key.empty() || key.find('.') != std::string::npos)
        fail(key_node.Mark(), "",
             "key \"" + key + "\"" + (path.empty() ? "" : " in " + path) +
                 (key.empty() ? " is empty" : " contains '.'") +
                 ": config keys are addressed by dotted paths, so it could never be read");
      if (auto [it, fresh] = first_line.emplace(key, line); !fresh)
        fail(key_node.Mark(), child, "duplicate key (first written on line " + std::to_string(it->second) + ")");
      lines_[child] = line;
      insert(out, key, entry.second, child, depth + 1);
    }
    return out;
  }

  toml::array array(const YAML::Node& seq, const std::string& path, std::size_t depth) {
    if (!seq.Tag().empty() && seq.Tag() != "?" && seq.Tag() != kYamlTag + "seq")
      fail(seq.Mark(), path, "unsupported tag " + seq.Tag() + " on a list");
    toml::array out;
    std::size_t index = 0;
    for (const auto& item : seq) {
      const std::string child = path + "." + std::to_string(index++);
      lines_[child] = item.Mark().line + 1;
      count(item, child, depth + 1);
      if (item.IsMap()) {
        out.push_back(table(item, child, depth + 1));
      } else if (item.IsSequence()) {
        out.push_back(array(item, child, depth + 1));
      } else {
        const PlainScalar s = scalar(item, child);
        if (s.type == PlainScalar::Type::Null)
          fail(item.Mark(), child, "null in a list: a list item cannot be left out; remove it or give a value");
        push_scalar(out, s);
      }
    }
    return out;
  }

  void insert(toml::table& out, const std::string& key, const YAML::Node& value, const std::string& path,
              std::size_t depth) {
    count(value, path, depth);
    if (value.IsMap()) {
      out.insert(key, table(value, path, depth));
    } else if (value.IsSequence()) {
      out.insert(key, array(value, path, depth));
    } else {
      const PlainScalar s = scalar(value, path);
      switch (s.type) {
        case PlainScalar::Type::Null: lines_.erase(path); break;  // OmegaConf's null: as if the key were absent
        case PlainScalar::Type::Bool: out.insert(key, s.boolean); break;
        case PlainScalar::Type::Int: out.insert(key, s.integer); break;
        case PlainScalar::Type::Float: out.insert(key, s.number); break;
        case PlainScalar::Type::String: out.insert(key, s.text); break;
      }
    }
  }

  static void push_scalar(toml::array& out, const PlainScalar& s) {
    switch (s.type) {
      case PlainScalar::Type::Bool: out.push_back(s.boolean); break;
      case PlainScalar::Type::Int: out.push_back(s.integer); break;
      case PlainScalar::Type::Float: out.push_back(s.number); break;
      default: out.push_back(s.text); break;
    }
  }

  // The scalar's value: quoted and block scalars are strings, `!!type` tags are obeyed, and
  // plain scalars resolve as OmegaConf resolves them.
  PlainScalar scalar(const YAML::Node& node, const std::string& path) const {
    PlainScalar s;
    if (node.IsNull()) {
      s.type = PlainScalar::Type::Null;
      return s;
    }
    const std::string& tag = node.Tag();
    if (tag == "?") return resolve(node, path);
    if (tag == "!" || tag == kYamlTag + "str") {
      s.text = node.Scalar();
      return s;
    }
    if (tag != kYamlTag + "int" && tag != kYamlTag + "float" && tag != kYamlTag + "bool")
      fail(node.Mark(), path, "unsupported tag " + tag + " (fthost reads !!str, !!int, !!float, !!bool and !!null)");
    s = resolve(node, path);
    const std::string wanted = tag.substr(kYamlTag.size());
    if (wanted == "float" && s.type == PlainScalar::Type::Int) {
      s.type = PlainScalar::Type::Float;
      s.number = static_cast<double>(s.integer);
    }
    const bool matches = (wanted == "int" && s.type == PlainScalar::Type::Int) ||
                         (wanted == "float" && s.type == PlainScalar::Type::Float) ||
                         (wanted == "bool" && s.type == PlainScalar::Type::Bool);
    if (!matches) fail(node.Mark(), path, "\"" + node.Scalar() + "\" is not a valid !!" + wanted);
    return s;
  }

  PlainScalar resolve(const YAML::Node& node, const std::string& path) const {
    try {
      return resolve_plain_scalar(node.Scalar());
    } catch (const ConfigError& e) {
      fail(node.Mark(), path, e.what());
    }
  }
};

std::string mark_text(const std::string& source_name, const YAML::Mark& mark) {
  return mark.is_null() ? source_name
                        : source_name + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// Where each document of a YAML stream starts, and where its top-level value is; the rest of the
// events are not needed.
class DocumentMarks final : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts, values;

  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { value_at(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { value_at(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    value_at(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    value_at(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    value_at(mark);
  }
  void OnMapEnd() override {}

 private:
  void value_at(const YAML::Mark& mark) {
    if (values.size() < starts.size()) values.push_back(mark);
  }
};

// The one document of a config. Not YAML::LoadAll: yaml-cpp 0.7 reads a ',' outside any [...] or
// {...} (", [0]", "- 1\n,") as an empty document without consuming it, so LoadAll adds empty
// documents forever. Here the stream's documents are walked one at a time, at most three, and a
// document that starts where the previous one did is such a stuck token, refused with its line.
YAML::Node load_one_document(const std::string& text, const std::string& source_name) {
  DocumentMarks documents;
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  while (documents.starts.size() < 3 && parser.HandleNextDocument(documents)) {
    const auto& starts = documents.starts;
    if (starts.size() >= 2 && starts.back().pos == starts[starts.size() - 2].pos) {
      const YAML::Mark& mark = starts.back();
      const bool comma = mark.pos >= 0 && static_cast<std::size_t>(mark.pos) < text.size() && text[mark.pos] == ',';
      throw ConfigError(mark_text(source_name, mark) + ": invalid YAML: " +
                        (comma ? "',' outside a flow collection (it separates the items of [...] or {...})"
                               : "a token where a value or a new document should start"));
    }
  }
  if (documents.starts.size() > 1) {
    const YAML::Mark& second = documents.values.size() > 1 ? documents.values[1] : documents.starts[1];
    throw ConfigError(source_name + (second.is_null() ? "" : ":" + std::to_string(second.line + 1)) +
                      ": a second YAML document (after ---): a config file holds one");
  }
  return documents.starts.empty() ? YAML::Node() : YAML::Load(text);
}

}  // namespace

std::shared_ptr<ConfigDocument> load_yaml_config_text(const std::string& text, const std::string& source_name) {
  YAML::Node document;
  try {
    document = load_one_document(text, source_name);
  } catch (const YAML::Exception& e) {
    throw ConfigError(mark_text(source_name, e.mark) + ": invalid YAML: " + e.msg);
  }
  YamlToToml reader(source_name);
  toml::table root = reader.root(document);
  auto doc = std::make_shared<ConfigDocument>(std::move(root), source_name);
  for (const auto& [path, line] : reader.lines()) doc->set_line(path, line);
  return doc;
}

}  // namespace fthost
