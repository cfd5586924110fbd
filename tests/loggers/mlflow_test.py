"""The MLflow logger against the real mlflow package (scripts/logger-reference-requirements.txt).

The tiny demo trains 10 steps with torchtune.training.metric_logging.MLFlowLogger swapped in by
command-line overrides, and mlflow's own client reads the run back:
  - from a file store (a file: URI, and a plain path to an empty directory): mlflow's FileStore;
  - from a real `mlflow server` on loopback with a SQLite backend, through its REST API;
  - after a second invocation continues the run (run_id);
  - through a proxy that answers 503 once mid-run (the run goes on, warns once, and sends what it
    kept when the server answers again), and through one that never answers again (the run
    succeeds and leaves the log-batch bodies it could not send, which complete the run).
Every metric equals, step for step, what the disk logger writes for the same run; the params are
torchtune's flatten_dict of the effective config (config.effective.toml), each value's str(); the
tags are those mlflow.start_run gives. An unreachable server stops the run at start, naming the
URI; a database URI is refused naming the key.

    python tests/loggers/mlflow_test.py FTHOST SOURCE_DIR
"""
import http.server
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

from demo_run import DETERMINISTIC, DemoRuns, check, flatten

os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # mlflow 3's file store is read only with this
import mlflow  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

FTHOST, SOURCE = sys.argv[1], Path(sys.argv[2])
WORK = Path(tempfile.mkdtemp(prefix="fthost-mlflow-"))
DEMO_RUNS = DemoRuns(FTHOST, SOURCE)
fthost = DEMO_RUNS.run
MLFLOW = ["metric_logger._component_=torchtune.training.metric_logging.MLFlowLogger"]


def effective_params(output_dir):
    return flatten(tomllib.loads((output_dir / "config.effective.toml").read_text()), ".", str)


def check_run(client, run, output_dir, reference, status="FINISHED", times=1, earlier_params=None):
    check(run.info.status == status, f"run status {run.info.status}, expected {status}")
    # A continued run keeps the params its first invocation logged (MLflow's params never change).
    expected_params = {**(earlier_params or {}), **effective_params(output_dir)}
    check(run.data.params == expected_params,
          "params differ from the flattened effective config:\n" +
          "\n".join(f"  {k}: {run.data.params.get(k)!r} != {v!r}" for k, v in expected_params.items()
                    if run.data.params.get(k) != v) +
          "".join(f"\n  extra {k}" for k in run.data.params if k not in expected_params))
    for tag in ("mlflow.user", "mlflow.source.name", "mlflow.source.type", "mlflow.runName"):
        check(tag in run.data.tags, f"tag {tag} missing: {run.data.tags}")
    check(run.data.tags["mlflow.source.name"] == "fthost", run.data.tags)
    check(set(reference) <= set(run.data.metrics), f"metrics {sorted(run.data.metrics)} lack some of {sorted(reference)}")
    for key, expected in reference.items():
        got = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, key))
        if key in DETERMINISTIC:
            check(got == sorted(expected * times), f"{key}: {got} != {expected * times}")
        else:
            check([s for s, _ in got] == sorted([s for s, _ in expected] * times), f"{key} steps: {got}")
    artifacts = [a.path for a in client.list_artifacts(run.info.run_id, str(output_dir).lstrip("/"))]
    check(any(a.endswith("config.effective.toml") for a in artifacts), f"no config artifact: {artifacts}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer within {seconds} s")


class FlakyProxy(http.server.ThreadingHTTPServer):
    """Forwards to the server, but answers 503 to log-batch calls number `first` to `last`."""

    def __init__(self, target, first, last):
        self.target, self.first, self.last, self.batches = target, first, last, 0
        super().__init__(("127.0.0.1", 0), FlakyHandler)


class FlakyHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def forward(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
        if self.path.endswith("/runs/log-batch"):
            self.server.batches += 1
            if self.server.first <= self.server.batches <= self.server.last:
                self.send_response(503)
                self.end_headers()
                return
        request = urllib.request.Request(self.server.target + self.path, data=body if body else None,
                                         method=self.command, headers={k: v for k, v in self.headers.items()
                                                                       if k.lower() != "host"})
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                status, payload = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, payload = e.code, e.read()
        self.send_response(status)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = forward


def run_through_proxy(uri, first, last, name):
    """The demo logging to `uri` through a FlakyProxy; its output directory and output."""
    proxy = FlakyProxy(uri, first, last)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    out = WORK / f"{name}_run"
    try:
        _, output = fthost(f"output_dir={out}", *MLFLOW,
                           f"metric_logger.tracking_uri=http://127.0.0.1:{proxy.server_address[1]}",
                           f"metric_logger.experiment_name=fthost-{name}")
    finally:
        proxy.shutdown()
    return out, output


def main():
    reference = DEMO_RUNS.disk_reference(WORK / "disk")
    check(set(DETERMINISTIC) <= set(reference), f"the disk logger wrote {sorted(reference)}")

    # The file store.
    store = WORK / "mlruns"
    out = WORK / "file_run"
    fthost(f"output_dir={out}", *MLFLOW, f"metric_logger.tracking_uri=file://{store}",
           "metric_logger.experiment_name=fthost-demo", "metric_logger.run_name=demo-run")
    client = MlflowClient(f"file://{store}")
    experiment = client.get_experiment_by_name("fthost-demo")
    check(experiment is not None, "no experiment fthost-demo in the file store")
    runs = client.search_runs([experiment.experiment_id])
    check(len(runs) == 1, f"{len(runs)} runs")
    check(runs[0].info.run_name == "demo-run", runs[0].info.run_name)
    check_run(client, runs[0], out, reference)
    first_params = effective_params(out)
    # Continued: the same run, the same config, ten more logged steps.
    fthost(f"output_dir={out}", *MLFLOW, f"metric_logger.tracking_uri=file://{store}",
           f"metric_logger.run_id={runs[0].info.run_id}")
    check(len(client.search_runs([experiment.experiment_id])) == 1, "run_id made a new run")
    check_run(client, client.get_run(runs[0].info.run_id), out, reference, times=2, earlier_params=first_params)
    # A plain path to an empty directory, no experiment: MLflow's default experiment, as mlflow makes it.
    store = WORK / "empty_store"
    store.mkdir()
    out = WORK / "default_run"
    fthost(f"output_dir={out}", *MLFLOW, f"metric_logger.tracking_uri={store}")
    client = MlflowClient(f"file://{store}")
    check(client.get_experiment("0").name == "Default", "no default experiment")
    runs = client.search_runs(["0"])
    check(len(runs) == 1 and runs[0].info.run_name.startswith("fthost-"), f"runs: {runs}")
    check_run(client, runs[0], out, reference)
    print("mlflow test: the file store holds the run as mlflow reads it, continued by run_id")

    # A real server with a SQLite backend.
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{WORK}/mlflow.db", "--artifacts-destination", str(WORK / "artifacts")],
        stdout=open(WORK / "server.log", "w"), stderr=subprocess.STDOUT)
    try:
        uri = f"http://127.0.0.1:{port}"
        wait_for(uri + "/health")
        out = WORK / "server_run"
        fthost(f"output_dir={out}", *MLFLOW, f"metric_logger.tracking_uri={uri}",
               "metric_logger.experiment_name=fthost-server")
        client = MlflowClient(uri)
        experiment = client.get_experiment_by_name("fthost-server")
        runs = client.search_runs([experiment.experiment_id])
        check(len(runs) == 1, f"{len(runs)} runs on the server")
        check_run(client, runs[0], out, reference)
        print("mlflow test: the server received the run through its REST API")

        # Lost mid-run: log-batch call 3 gets 503 (the params are call 1, step 1 call 2). What the run
        # logs after it is kept (the next attempt waits 30 s) and sent at the end, by the close.
        out, output = run_through_proxy(uri, 3, 3, "flaky")
        warnings = [line for line in output.splitlines() if "The run goes on" in line]
        check(len(warnings) == 1, f"{len(warnings)} warnings about the lost server:\n{output}")
        check("answers again" in output, f"no word of the server answering again:\n{output}")
        runs = client.search_runs([client.get_experiment_by_name("fthost-flaky").experiment_id])
        check_run(client, runs[0], out, reference)
        check(not list(out.glob("mlflow_unsent_*.jsonl")), "the kept metrics' file stayed after they were sent")
        print("mlflow test: a server lost mid-run cost one warning and no metric")

        # Lost for good from log-batch call 3: the run still succeeds, and the file it leaves holds
        # complete log-batch bodies, which sent as docs/loggers.md says complete the run's metrics.
        out, output = run_through_proxy(uri, 3, 10**9, "lost")
        check(output.count("The run goes on") == 1 and "never reached" in output, f"expected two warnings:\n{output}")
        unsent = list(out.glob("mlflow_unsent_*.jsonl"))
        check(len(unsent) == 1, f"unsent files: {unsent}")
        for line in unsent[0].read_text().splitlines():
            request = urllib.request.Request(uri + "/api/2.0/mlflow/runs/log-batch", data=line.encode(), method="POST",
                                             headers={"Content-Type": "application/json"})
            urllib.request.urlopen(request, timeout=30).close()
        runs = client.search_runs([client.get_experiment_by_name("fthost-lost").experiment_id])
        check_run(client, runs[0], out, reference, status="RUNNING")
        print("mlflow test: a server lost for good left the run's metrics in a file that completes it")
    finally:
        server.terminate()
        server.wait(timeout=30)

    # Unreachable at start, and a database URI: refused before training, naming what to fix.
    code, output = fthost(f"output_dir={WORK / 'down'}", *MLFLOW, f"metric_logger.tracking_uri=http://127.0.0.1:{port}",
                          expect_ok=False)
    check(code != 0 and f"127.0.0.1:{port}" in output and "tracking_uri" in output and "Step 1" not in output,
          f"an unreachable server was not refused at start:\n{output}")
    code, output = fthost(f"output_dir={WORK / 'db'}", *MLFLOW, "metric_logger.tracking_uri=sqlite:///mlflow.db",
                          expect_ok=False)
    check(code != 0 and "metric_logger.tracking_uri" in output and "mlflow server --backend-store-uri" in output,
          f"a database URI was not refused by name:\n{output}")
    print("mlflow test: passed")


if __name__ == "__main__":
    main()
