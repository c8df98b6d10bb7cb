#!/usr/bin/env python3
"""Print every figure of idemlab's speed table from one sitting: the Go
benchmarks' start-up and delivery ratios (from `go test -bench` output),
the default experiment and the claim scenario timed with the built binary,
the batch scenario against its simulated-latency floor, and the journal's
resume (runs 2 and 3, in the worker) against its floor beside the article's
own Python program (the peer) run with the same items and latencies.

Usage: figures.py --exe ./idemlab --go-bench FILE [--peer PATH] [--runs N]

The default experiment and the claim scenario run N times (3 unless told),
since one wall time on a shared 2-core machine says little; every run is
printed, and the batch and journal ratios are printed for each default run.
"""

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path


def go_metric(log: str, bench: str, unit: str):
    pat = re.compile(r"^" + re.escape(bench) + r"(?:-\d+)?\s.*?([\d.]+) " + re.escape(unit) + r"(\s|$)")
    for line in log.splitlines():
        m = pat.search(line)
        if m:
            return float(m.group(1))
    return None


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def scenario_walls(folder: Path):
    """Per scenario, first process start to last process end."""
    spans = {}
    with open(folder / "raw-processes.jsonl", encoding="utf-8") as f:
        for line in f:
            p = json.loads(line)
            s = datetime.fromisoformat(p["started_at"].replace("Z", "+00:00"))
            e = datetime.fromisoformat(p["ended_at"].replace("Z", "+00:00"))
            lo, hi = spans.get(p["scenario"], (s, e))
            spans[p["scenario"]] = (min(lo, s), max(hi, e))
    return {k: (v[1] - v[0]).total_seconds() for k, v in spans.items()}


def batch_figures(folder: Path):
    res = json.load(open(folder / "results.json", encoding="utf-8"))
    for s in res["scenarios"]:
        if s["name"] == "batch":
            return s["extra"], s["settings"]
    return None, None


def peer_ratios(peer_path: Path, settings):
    """The peer's journal resume (runs 2 and 3) over the same floor."""
    spec = importlib.util.spec_from_file_location("resumable_runner", peer_path)
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    out = {}
    for mode in settings["modes"]:
        r = peer.run_experiment(mode, trials=settings["trials"], total=settings["items"], fail_at=settings["fail_at"])
        lat = settings["latency_ms"]
        per_item = lat["validate"] + lat["transform"] + lat["send"]
        remaining = settings["items"] - settings["fail_at"]
        # Run 2 executes the items after the failed one; run 3 sends the
        # failed item again only when the receiver never accepted it.
        floor = remaining * per_item + (lat["send"] if mode == "before_accept" else 0)
        out[mode] = (r["journal"]["avg_ms"], floor)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--go-bench", required=True)
    ap.add_argument("--input", default="input.json")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--peer", default=os.environ.get("IDEMLAB_PEER", str(Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "resumable_runner.py")))
    a = ap.parse_args()
    log = open(a.go_bench, encoding="utf-8").read()
    rows = []

    start = go_metric(log, "BenchmarkStartInterleaved", "worker-x-sqliteonly")
    rows.append(("worker start ÷ a program linking only mattn/go-sqlite3", f"{start:.2f}×" if start else "n/a", "≤ 1.5×"))
    deliv = go_metric(log, "BenchmarkDeliveryInterleaved", "worker-x-minimal")
    rows.append(("child delivery round trip ÷ the minimal program, same transaction", f"{deliv:.2f}×" if deliv else "n/a", "≤ 1.3×"))

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        walls, spans, folders = [], [], []
        for i in range(a.runs):
            out = tmp / f"all-{i + 1}"
            walls.append(timed([a.exe, "experiment", "--quiet", "--input", a.input, "--out", str(out)]))
            spans.append(scenario_walls(out))
            folders.append(out)
        per = "; ".join(f"{w:.1f} s (" + ", ".join(f"{k} {v:.1f} s" for k, v in sp.items()) + ")" for w, sp in zip(walls, spans))
        rows.append((f"default experiment, built binary, all default scenarios, {a.runs} runs", per, "≤ 45 s"))
        claims = [timed([a.exe, "experiment", "--quiet", "--input", a.input, "--scenario", "claim", "--out", str(tmp / f"claim-{i + 1}")]) for i in range(a.runs)]
        rows.append((f"claim scenario alone (8 racers, 20 repetitions, all mutants), {a.runs} runs", ", ".join(f"{c:.1f} s" for c in claims), "≤ 8 s"))
        figs = [batch_figures(f) for f in folders]
        settings = figs[0][1]
        total = sum(t["all_runs_floor_ms"] for t in figs[0][0]["trials"]) / 1000
        ratios = ", ".join(f"{x['wall']['ratio']:.3f}×" for x, _ in figs)
        bwalls = ", ".join(f"{x['wall']['ms'] / 1000:.1f}" for x, _ in figs)
        path = figs[0][0]["wall"]["floor_ms"] / 1000
        rows.append(("batch scenario ÷ its simulated-sleep floor",
                     f"{ratios} (walls {bwalls} s ÷ the critical path's floor {path:.1f} s; every run's simulated latency"
                     f" adds up to {total:.1f} s; {settings.get('first_run_lanes', 1)} first-run lane(s), {settings['lanes']} mode lane(s))", "≤ 1.15×"))
        peer = {}
        if Path(a.peer).is_file():
            peer = peer_ratios(Path(a.peer), settings)
        for mode in settings["modes"]:
            ours = ", ".join(f"{t['ratio']:.3f}×" for x, _ in figs for t in x["timings"] if t["condition"] == f"{mode}/journal")
            if mode in peer:
                ms, floor = peer[mode]
                ours += f"; the peer {ms / floor:.3f}× ({ms:.1f} ms ÷ {floor:.1f} ms)"
            rows.append((f"journal runs 2+3 in the worker ÷ floor, {mode}", ours, "≤ the peer's and ≤ 1.10×"))

    width = max(len(r[0]) for r in rows)
    for name, got, target in rows:
        print(f"{name.ljust(width)}  {got}   target {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
