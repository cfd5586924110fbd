// HTTP requests for the loggers that talk to a tracking server (MLflow's REST API), through
// libcurl. One request at a time, with a connect timeout, so a server that is down costs a
// logging call seconds, not the run.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace ft_loggers {

struct HttpResponse {
  long status = 0;  // the HTTP status code
  std::string body;
};

struct HttpRequest {
  std::string method = "GET";  // GET, POST, PUT
  std::string url;
  std::string body;
  std::vector<std::string> headers;  // "Name: value"
  std::chrono::seconds connect_timeout{5};
  std::chrono::seconds total_timeout{60};
};

// Thrown when no HTTP response came back (refused, unresolved, timed out, TLS failure): the
// server was not reached, as opposed to a response with an error status.
struct HttpTransportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Sends `request` and returns the response, whatever its status. Throws HttpTransportError
// naming the URL and libcurl's reason when none came back.
HttpResponse send_http(const HttpRequest& request);

// Whether this build has an HTTP client (libcurl, FTHOST_WITH_CURL).
bool http_available();

}  // namespace ft_loggers
