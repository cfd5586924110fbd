"""A `metric_logger` `_component_` for torchtune's recipe that writes one JSON object per step,
as fthost's DiskLogger does with output_fmt = "jsonl", and adds the process's peak RSS so far
(`peak_memory_rss`, GiB, VmHWM) as fthost's log_peak_memory_stats does on a CPU: torchtune logs
memory statistics only on CUDA."""
import json
import pathlib


def _peak_rss_gib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / 2**30
    return 0.0


class JsonlLogger:
    def __init__(self, log_dir: str, filename: str = "metrics.jsonl"):
        path = pathlib.Path(log_dir)
        path.mkdir(parents=True, exist_ok=True)
        self._file = (path / filename).open("a")

    def log(self, name, data, step) -> None:
        self.log_dict({name: data}, step)

    def log_dict(self, payload, step) -> None:
        # The recipe hands over 0-d tensors (the token count is one) as well as floats.
        row = {"step": step, **{k: float(v) for k, v in payload.items()}, "peak_memory_rss": _peak_rss_gib()}
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()

    def log_config(self, config) -> None:
        pass

    def close(self) -> None:
        self._file.close()
