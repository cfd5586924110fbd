"""What the logger tests share: the tiny demo trained 10 steps with overrides, the same run's
metrics as the disk logger writes them (the reference), and the config flattened as each service
flattens nested parameters."""
import json
import subprocess
from pathlib import Path

# The metrics that equal run to run; the timing metrics are compared by their steps only.
DETERMINISTIC = ["loss", "lr", "grad_norm", "num_tokens"]


class DemoRuns:
    def __init__(self, fthost, source):
        self.fthost = fthost
        self.demo = [
            "--config", str(Path(source) / "configs/tiny_demo.toml"),
            f"dataset.source={Path(source) / 'configs/demo/sort_tokens.jsonl'}",
            "epochs=1", "max_steps_per_epoch=10", "log_every_n_steps=1",
        ]

    def run(self, *args, expect_ok=True):
        """(exit code, stdout and stderr) of the demo with `args` overriding."""
        result = subprocess.run([self.fthost, *self.demo, *args], capture_output=True, text=True, timeout=600)
        output = result.stdout + result.stderr
        if expect_ok and result.returncode != 0:
            raise AssertionError(f"fthost {' '.join(args)} failed ({result.returncode}):\n{output}")
        return result.returncode, output

    def disk_reference(self, out):
        """The demo with the disk logger in `out`: metric -> [(step, value)]."""
        self.run(f"output_dir={out}", "metric_logger._component_=torchtune.training.metric_logging.DiskLogger",
                 f"metric_logger.log_dir={out}/logs", "metric_logger.output_fmt=jsonl")
        history = {}
        for line in next((Path(out) / "logs").glob("log_*.jsonl")).read_text().splitlines():
            record = json.loads(line)
            for key, value in record.items():
                if key != "step":
                    history.setdefault(key, []).append((record["step"], value))
        return history


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def flatten(d, separator, leaf=lambda value: value, prefix=""):
    """Nested tables to one level: torchtune's flatten_dict ("." and str() for MLflow), comet_ml's
    nested parameters ("|", values as they are)."""
    out = {}
    for key, value in d.items():
        name = f"{prefix}{separator}{key}" if prefix else key
        if isinstance(value, dict):
            out.update(flatten(value, separator, leaf, name))
        else:
            out[name] = leaf(value)
    return out
