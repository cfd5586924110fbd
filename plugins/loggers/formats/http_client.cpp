#include "http_client.h"

#include <curl/curl.h>

#include <memory>
#include <mutex>

namespace ft_loggers {

namespace {

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::size_t append_to_string(char* data, std::size_t size, std::size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct HeaderListDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

}  // namespace

bool http_available() { return true; }

HttpResponse send_http(const HttpRequest& request) {
  init_curl_once();
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) throw HttpTransportError(request.url + ": libcurl could not start a request");
  // curl_slist_append returns the list's head, the same pointer once the list exists.
  std::unique_ptr<curl_slist, HeaderListDeleter> headers;
  for (const auto& header : request.headers) {
    curl_slist* head = curl_slist_append(headers.get(), header.c_str());
    if (!head) throw HttpTransportError(request.url + ": libcurl could not add a header");
    if (!headers) headers.reset(head);
  }
  HttpResponse response;
  char error[CURL_ERROR_SIZE] = {};
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for timeouts: the training threads are not curl's
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, static_cast<long>(request.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_TIMEOUT, static_cast<long>(request.total_timeout.count()));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append_to_string);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &response.body);
  if (headers) curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  if (request.method == "POST" || request.method == "PUT") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  }
  if (request.method != "GET" && request.method != "POST")
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  const CURLcode result = curl_easy_perform(h);
  if (result != CURLE_OK)
    throw HttpTransportError(request.url + ": " + (error[0] ? std::string(error) : curl_easy_strerror(result)));
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace ft_loggers
