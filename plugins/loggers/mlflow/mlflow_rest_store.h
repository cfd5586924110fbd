// An MLflow tracking server, through its REST API (/api/2.0/mlflow/...), as mlflow's own client
// speaks to it: experiments get-by-name and create, runs create / get / update / log-batch, and
// artifacts through the server's proxy (mlflow-artifacts: URIs, `mlflow server`'s default).
// Credentials as mlflow reads them: $MLFLOW_TRACKING_TOKEN (bearer), else
// $MLFLOW_TRACKING_USERNAME and $MLFLOW_TRACKING_PASSWORD (basic).
#pragma once

#include "mlflow_store.h"

#include <ft/errors.h>

#include <memory>
#include <string>

namespace ft_mlflow {

// The server did not answer (refused, timed out, unresolved) or answered that it failed (5xx,
// 429): what a later attempt may get past, unlike a refusal of the request itself.
struct ServerUnavailable : ft::Error {
  using ft::Error::Error;
};

// The server at `uri` (http:// or https://). Nothing is sent until the first call.
std::unique_ptr<Store> open_rest_store(const std::string& uri);

}  // namespace ft_mlflow
