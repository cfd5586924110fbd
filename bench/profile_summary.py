#!/usr/bin/env python3
"""Self time per operator from a Chrome trace (the profiler plugin's, or torch.profiler's export).
Not a test.

  python3 bench/profile_summary.py TRACE.json [--top 25] [--steps N]

Complete events ("ph": "X") on each thread nest by time; an operator's self time is its duration
minus that of the events directly inside it. The profiler's own span is the recorded window: what
the operators leave of it is printed as "(outside any operator)". Printed: the operators with the most self time,
their share of all recorded self time, call counts, and per step when --steps gives how many
steps the trace covers.
"""
import argparse
import collections
import json


def self_times(events):
    totals = collections.defaultdict(float)
    calls = collections.Counter()
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            by_thread[(e.get("pid"), e.get("tid"))].append(e)
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # [event, time of its children]
        for e in thread_events:
            while stack and e["ts"] >= stack[-1][0]["ts"] + stack[-1][0]["dur"]:
                done, children = stack.pop()
                totals[done["name"]] += done["dur"] - children
            if stack:
                stack[-1][1] += e["dur"]
            stack.append([e, 0.0])
            calls[e["name"]] += 1
        while stack:
            done, children = stack.pop()
            totals[done["name"]] += done["dur"] - children
    return totals, calls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--steps", type=int, default=0)
    a = ap.parse_args()
    with open(a.trace) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    totals, calls = self_times(events)
    # The profiler's own span (on a pseudo-thread of its own) is the recorded window; what the
    # operators' self times do not cover of it ran outside any recorded operator (the fused
    # kernels' forward passes, the optimizer step, collation). Exact for one operator thread.
    window = sum(totals.pop(n) for n in [n for n in totals if n.startswith(("PyTorch Profiler", "ProfilerStep"))])
    if window:
        totals["(outside any operator)"] = max(0.0, window - sum(totals.values()))
        calls["(outside any operator)"] = 0
    everything = sum(totals.values())
    print(f"{'operator':64s} {'self ms':>10s} {'share':>7s} {'calls':>8s}" + ("  ms/step" if a.steps else ""))
    for name, us in sorted(totals.items(), key=lambda kv: -kv[1])[: a.top]:
        line = f"{name[:64]:64s} {us / 1e3:10.1f} {us / everything:7.1%} {calls[name]:8d}"
        if a.steps:
            line += f"  {us / 1e3 / a.steps:8.1f}"
        print(line)
    print(f"{'all recorded self time':64s} {everything / 1e3:10.1f}")


if __name__ == "__main__":
    main()
