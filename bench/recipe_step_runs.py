"""What the recipe-step benchmarks (bench/vision_step.py, bench/llama4_step.py) share: running
one side to the end with its peak RSS, reading the steps torchtune's DiskLogger wrote, and the
logger the torchtune side installs to record each step's time.

Not a benchmark itself: imported by them.
"""
import os
import pathlib
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Python text for the module a torchtune run imports its metric logger from (the caller prepends
# its own imports, DiskLogger and sys among them): the recipe's own step time and token count,
# read from its train() frame, and the process's peak RSS.
STEP_DISK_LOGGER = '''def _peak_rss_gib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 / 2**30
    return 0.0


class StepDiskLogger(DiskLogger):
    """DiskLogger, plus the recipe's `time_per_step` and `num_tokens` (locals of its train(), from
    which it computes tokens_per_second_per_gpu), the process's peak RSS so far and, once, the
    model's trainable and total parameter counts; every value a plain float."""

    def log_dict(self, payload, step):
        caller = sys._getframe(1).f_locals
        if "time_per_step" not in caller or "num_tokens" not in caller:
            raise RuntimeError("the recipe's train() has no time_per_step / num_tokens: another torchtune version?")
        row = {k: float(v) for k, v in payload.items()}
        row.update(step_seconds=float(caller["time_per_step"]), num_tokens=float(caller["num_tokens"]),
                   peak_memory_rss=_peak_rss_gib())
        if step == 1:
            params = list(caller["self"]._model.parameters())
            row.update(trainable_params=float(sum(p.numel() for p in params if p.requires_grad)),
                       total_params=float(sum(p.numel() for p in params)))
        super().log_dict(row, step)
'''


def thread_env(threads: int, pythonpath: str = "") -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE", MKL_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1",
               HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1",
               HF_DATASETS_DISABLE_PROGRESS_BARS="1", TRANSFORMERS_VERBOSITY="error")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def read_disk_log(path: pathlib.Path) -> list:
    """DiskLogger's lines, "Step N | key:value key:value ..."."""
    rows = []
    for line in path.read_text().splitlines():
        if " | " not in line:
            continue
        head, body = line.split(" | ", 1)
        row = {"step": int(head.split()[1])}
        row.update({k: float(v) for k, v in (kv.split(":", 1) for kv in body.split())})
        rows.append(row)
    return rows


class RunFailed(Exception):
    pass


def launch(command: list, env: dict, log: pathlib.Path) -> dict:
    """Runs to the end; the whole run's wall time, peak RSS (wait4: its largest process), page
    faults and CPU seconds (wait4: the process and its waited-for descendants)."""
    start = time.perf_counter()
    with log.open("w") as f:
        proc = subprocess.Popen(command, env=env, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            raise
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RunFailed(f"exit {code} ({log}):\n{tail(log.read_text(errors='replace'))}")
    return {"wall_s": time.perf_counter() - start, "peak_rss_gib": usage.ru_maxrss / 2**20,
            "minor_faults": usage.ru_minflt, "cpu_s": usage.ru_utime + usage.ru_stime}


def summarise(rows: list, run: dict) -> dict:
    if not rows:
        raise RunFailed("no steps logged")
    run.update(seconds=[r["step_seconds"] for r in rows], tokens=[int(r["num_tokens"]) for r in rows],
               losses=[r["loss"] for r in rows], step_rss_gib=max(r.get("peak_memory_rss", 0.0) for r in rows),
               trainable=rows[0].get("trainable_params"))
    return run
