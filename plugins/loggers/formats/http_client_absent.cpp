// The HTTP client of a build without libcurl (FTHOST_WITH_CURL=OFF): every request fails saying so.
#include "http_client.h"

namespace ft_loggers {

bool http_available() { return false; }

HttpResponse send_http(const HttpRequest& request) {
  throw HttpTransportError(request.url +
                           ": this fthost was built without an HTTP client (libcurl: install libcurl4-openssl-dev "
                           "and configure with -DFTHOST_WITH_CURL=ON)");
}

}  // namespace ft_loggers
