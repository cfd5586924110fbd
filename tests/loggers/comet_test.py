"""The Comet logger against the real comet_ml package (scripts/logger-reference-requirements.txt).

The tiny demo trains 10 steps with torchtune.training.metric_logging.CometLogger (online = false)
swapped in by command-line overrides. comet_ml's own uploader (comet_ml.offline.OfflineSender)
reads the archive, every message checked against comet_ml's JSON schemas, with only its network
calls replaced by recorders: the experiment's key, project, workspace, tags and resume strategy
are the config's, every metric equals step for step what the disk logger writes for the same
run, the parameters are the effective config flattened as comet_ml flattens nested parameters
("|"), and the config is an asset. Online mode, and a malformed experiment_key, are refused at
start, naming the key.

    python tests/loggers/comet_test.py FTHOST SOURCE_DIR
"""
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

from demo_run import DETERMINISTIC, DemoRuns, check, flatten

from comet_ml.offline import OfflineSender, unzip_offline_archive

FTHOST, SOURCE = sys.argv[1], Path(sys.argv[2])
WORK = Path(tempfile.mkdtemp(prefix="fthost-comet-"))
DEMO_RUNS = DemoRuns(FTHOST, SOURCE)
fthost = DEMO_RUNS.run
COMET = ["metric_logger._component_=torchtune.training.metric_logging.CometLogger"]
KEY = "fthostcometdemo0123456789abcdefg"


class RecordingSender(OfflineSender):
    """comet_ml's uploader, its reading and validation as they are, its sending recorded."""

    def __init__(self, offline_dir):
        self.sent_metrics, self.sent_params, self.others, self.uploads, self.errors = [], [], {}, [], []
        super().__init__(api_key="unused", offline_dir=offline_dir, connection=object(), rest_api_client=object(),
                         raise_validation_error_for_tests=True)

    def _send_sampled_metrics_batch(self, samples):
        self.sent_metrics.extend(samples)

    def _send_parameter_messages_batch(self, message_items):
        self.sent_params.extend(item.message for item in message_items)

    def _send_log_other(self, key, value):
        self.others[key] = value

    def _process_upload_message(self, message):
        self.uploads.append(message)

    def _report_experiment_error(self, message):
        self.errors.append(message)


def main():
    reference = DEMO_RUNS.disk_reference(WORK / "disk")
    out = WORK / "run"
    _, output = fthost(f"output_dir={out}", *COMET, "metric_logger.online=false",
                       f"metric_logger.offline_directory={WORK / 'offline'}", "metric_logger.project=fthost-demo",
                       "metric_logger.workspace=acme", f"metric_logger.experiment_key={KEY}",
                       "metric_logger.mode=create", "metric_logger.experiment_name=demo-run",
                       'metric_logger.tags=["tiny","demo"]')
    archives = list((WORK / "offline").glob("*.zip"))
    check(len(archives) == 1, f"archives: {archives}\n{output}")
    check(archives[0].name == f"{KEY}.zip", archives[0].name)
    check(f"comet upload {archives[0]}" in output, "the upload command is not shown")
    check(not list((WORK / "offline").glob(".*.partial")), "the staging directory stayed")

    sender = RecordingSender(unzip_offline_archive(str(archives[0])))
    check(sender.experiment_id == KEY, sender.experiment_id)
    check(sender.metadata_project_name == "fthost-demo" and sender.metadata_workspace == "acme",
          f"{sender.metadata_project_name} {sender.metadata_workspace}")
    check(sender.tags == ["tiny", "demo"] and sender.resume_strategy == "create", f"{sender.tags} {sender.resume_strategy}")
    sender._send_messages()
    check(not sender.errors, f"comet_ml reported errors reading the archive: {sender.errors}")
    check(sender.others.get("Name") == "demo-run" and sender.others.get("offline_experiment") is True, sender.others)

    history = {}
    for sample in sender.sent_metrics:
        metric = sample["metric"]
        history.setdefault(metric["metricName"], []).append((metric["step"], metric["metricValue"]))
    for key, expected in reference.items():
        got = sorted(history.get(key, []))
        if key in DETERMINISTIC:
            check(got == sorted(expected), f"{key}: {got} != {expected}")
        else:
            check([s for s, _ in got] == [s for s, _ in sorted(expected)], f"{key} steps: {got}")

    params = {}
    for message in sender.sent_params:
        param = message.param or message.params
        params[param["paramName"]] = param["paramValue"]
    expected = flatten(tomllib.loads((out / "config.effective.toml").read_text()), "|")
    check(params == expected, "parameters differ from the flattened effective config:\n" +
          "\n".join(f"  {k}: {params.get(k)!r} != {v!r}" for k, v in expected.items() if params.get(k) != v) +
          "".join(f"\n  extra {k}" for k in params if k not in expected))
    check(len(sender.uploads) == 1 and sender.uploads[0]["payload"]["additional_params"]["fileName"] ==
          "config.effective.toml", f"uploads: {sender.uploads}")
    stored = sender.uploads[0]["payload"]["file_path"]
    with zipfile.ZipFile(archives[0]) as archive:
        asset = archive.read(stored).decode()
    check(tomllib.loads(asset) == tomllib.loads((out / "config.effective.toml").read_text()), "the config asset differs")
    print("comet test: comet_ml's uploader reads the archive: metrics, parameters, asset and metadata")

    code, output = fthost(f"output_dir={WORK / 'online'}", *COMET, "metric_logger.online=true", expect_ok=False)
    check(code != 0 and "metric_logger.online" in output and "comet upload" in output,
          f"online mode was not refused at start:\n{output}")
    code, output = fthost(f"output_dir={WORK / 'badkey'}", *COMET, "metric_logger.online=false",
                          "metric_logger.experiment_key=short", expect_ok=False)
    check(code != 0 and "metric_logger.experiment_key" in output, f"a malformed key was not refused:\n{output}")
    print("comet test: passed")


if __name__ == "__main__":
    main()
