#include "mlflow_rest_store.h"

#include "http_client.h"
#include "run_identity.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

namespace ft_mlflow {

namespace {

using Json = nlohmann::json;

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], kAlphabet[v & 63]};
  }
  if (i < bytes.size()) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=', '='};
  }
  return out;
}

std::string url_encode(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  return out;
}

// A double as protobuf's JSON mapping takes it: non-finite values as strings.
Json json_double(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return value;
}

Json key_values(const std::vector<KeyValue>& items) {
  Json out = Json::array();
  for (const auto& [key, value] : items) out.push_back({{"key", key}, {"value", value}});
  return out;
}

class RestStore final : public Store {
 public:
  explicit RestStore(std::string uri) : uri_(std::move(uri)) {
    while (!uri_.empty() && uri_.back() == '/') uri_.pop_back();
    headers_.push_back("Content-Type: application/json");
    if (const std::string token = ft_loggers::environment_variable("MLFLOW_TRACKING_TOKEN"); !token.empty())
      headers_.push_back("Authorization: Bearer " + token);
    else if (const std::string user = ft_loggers::environment_variable("MLFLOW_TRACKING_USERNAME"); !user.empty())
      headers_.push_back("Authorization: Basic " +
                         base64(user + ":" + ft_loggers::environment_variable("MLFLOW_TRACKING_PASSWORD")));
  }

  std::string experiment_id(const std::string& name) override {
    if (name.empty()) return "0";
    const Json found = call("GET", "/api/2.0/mlflow/experiments/get-by-name?experiment_name=" + url_encode(name), {},
                            /*absent_is_null=*/true);
    if (!found.is_null()) {
      const Json& experiment = found.at("experiment");
      if (experiment.value("lifecycle_stage", "active") != "active")
        throw ft::Error("MLFlowLogger: experiment \"" + name + "\" on " + describe() +
                        " was deleted; restore it (mlflow experiments restore) or choose another experiment_name");
      return experiment.at("experiment_id").get<std::string>();
    }
    return call("POST", "/api/2.0/mlflow/experiments/create", {{"name", name}}).at("experiment_id").get<std::string>();
  }

  std::string create_run(const std::string& experiment_id, const std::string& run_name, const std::string& user,
                         std::int64_t start_ms, const std::vector<KeyValue>& tags) override {
    const Json created = call("POST", "/api/2.0/mlflow/runs/create",
                              {{"experiment_id", experiment_id},
                               {"user_id", user},
                               {"start_time", start_ms},
                               {"run_name", run_name},
                               {"tags", key_values(tags)}});
    const Json& info = created.at("run").at("info");
    const std::string run_id = info.at("run_id").get<std::string>();
    artifact_uris_[run_id] = info.value("artifact_uri", "");
    return run_id;
  }

  void resume_run(const std::string& run_id) override {
    const Json run = call("GET", "/api/2.0/mlflow/runs/get?run_id=" + url_encode(run_id), {}, true);
    if (run.is_null())
      throw ft::Error("MLFlowLogger: no run " + run_id + " on " + describe() +
                      " (run_id, or $MLFLOW_RUN_ID, names a run to continue)");
    const Json& info = run.at("run").at("info");
    if (info.value("lifecycle_stage", "active") != "active")
      throw ft::Error("MLFlowLogger: run " + run_id + " on " + describe() + " was deleted");
    artifact_uris_[run_id] = info.value("artifact_uri", "");
    call("POST", "/api/2.0/mlflow/runs/update", {{"run_id", run_id}, {"status", "RUNNING"}});
  }

  void log_batch(const std::string& run_id, const std::vector<Metric>& metrics, const std::vector<KeyValue>& params,
                 const std::vector<KeyValue>& tags) override {
    Json metric_items = Json::array();
    for (const auto& m : metrics)
      metric_items.push_back(
          {{"key", m.key}, {"value", json_double(m.value)}, {"timestamp", m.timestamp_ms}, {"step", m.step}});
    call("POST", "/api/2.0/mlflow/runs/log-batch",
         {{"run_id", run_id}, {"metrics", metric_items}, {"params", key_values(params)}, {"tags", key_values(tags)}});
  }

  void log_artifact(const std::string& run_id, const std::string& artifact_path, const std::string& content) override {
    const std::string& artifact_uri = artifact_uris_[run_id];
    static constexpr char kProxied[] = "mlflow-artifacts:";
    if (artifact_uri.rfind(kProxied, 0) != 0)
      throw ft::Error("the run's artifact location " + artifact_uri +
                      " is not the server's artifact proxy (mlflow-artifacts:); fthost writes artifacts through "
                      "`mlflow server`'s proxy only");
    std::string path = artifact_uri.substr(sizeof kProxied - 1);
    while (!path.empty() && path.front() == '/') path.erase(0, 1);
    ft_loggers::HttpRequest request;
    request.method = "PUT";
    request.url = uri_ + "/api/2.0/mlflow-artifacts/artifacts/" + path + "/" + artifact_path;
    request.body = content;
    request.headers = headers_;
    request.headers[0] = "Content-Type: application/octet-stream";
    check(send(request), request);
  }

  void end_run(const std::string& run_id, RunStatus status, std::int64_t end_ms) override {
    call("POST", "/api/2.0/mlflow/runs/update",
         {{"run_id", run_id}, {"status", run_status_name(status)}, {"end_time", end_ms}});
  }

  std::string describe() const override { return "the MLflow server at " + uri_; }

 private:
  ft_loggers::HttpResponse send(const ft_loggers::HttpRequest& request) const {
    try {
      return ft_loggers::send_http(request);
    } catch (const ft_loggers::HttpTransportError& e) {
      throw ServerUnavailable(std::string("MLFlowLogger: cannot reach ") + describe() + ": " + e.what());
    }
  }

  // Throws for an error status: ServerUnavailable where a later attempt may succeed.
  Json check(const ft_loggers::HttpResponse& response, const ft_loggers::HttpRequest& request,
             bool absent_is_null = false) const {
    if (response.status >= 200 && response.status < 300) {
      if (response.body.empty()) return Json::object();
      try {
        return Json::parse(response.body);
      } catch (const Json::exception&) {
        throw ft::Error("MLFlowLogger: " + describe() + " answered " + request.method + " " + request.url +
                        " with something that is not JSON: " + response.body.substr(0, 200));
      }
    }
    std::string code, message = response.body.substr(0, 500);
    try {
      const Json error = Json::parse(response.body);
      code = error.value("error_code", "");
      message = error.value("message", message);
    } catch (const Json::exception&) {
    }
    if (absent_is_null && code == "RESOURCE_DOES_NOT_EXIST") return nullptr;
    const std::string text = "MLFlowLogger: " + describe() + " answered " + request.method + " " + request.url +
                             " with HTTP " + std::to_string(response.status) + (code.empty() ? "" : " " + code) + ": " +
                             message;
    if (response.status >= 500 || response.status == 429) throw ServerUnavailable(text);
    throw ft::Error(text);
  }

  Json call(const std::string& method, const std::string& path, const Json& body, bool absent_is_null = false) const {
    ft_loggers::HttpRequest request;
    request.method = method;
    request.url = uri_ + path;
    if (method != "GET") request.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
    request.headers = headers_;
    return check(send(request), request, absent_is_null);
  }

  std::string uri_;
  std::vector<std::string> headers_;
  std::map<std::string, std::string> artifact_uris_;
};

}  // namespace

std::unique_ptr<Store> open_rest_store(const std::string& uri) { return std::make_unique<RestStore>(uri); }

}  // namespace ft_mlflow
