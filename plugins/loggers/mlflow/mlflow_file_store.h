// MLflow's file store (mlflow/store/tracking/file_store.py), written directly: the layout the
// mlflow package reads from a `file:` tracking URI or a directory.
//   ROOT/0/meta.yaml                       the default experiment, made with the store
//   ROOT/<experiment id>/meta.yaml          name, artifact location, lifecycle stage
//   ROOT/<experiment id>/<run id>/meta.yaml the run's info (status, start and end times)
//     metrics/<key>                        a line per value: "<ms timestamp> <value> <step>"
//     params/<key>, tags/<key>             the value, no newline
//     artifacts/                           the run's files
// Every metric line is appended whole and each meta.yaml replaced atomically, so a killed run
// leaves a store mlflow reads (its run still RUNNING).
#pragma once

#include "mlflow_store.h"

#include <memory>
#include <string>

namespace ft_mlflow {

// The store at `root` (a directory, created with the default experiment when absent).
std::unique_ptr<Store> open_file_store(const std::string& root);

}  // namespace ft_mlflow
