#!/usr/bin/env python3
"""Time the article's Python program (the peer) the way the Go benchmarks
in worker/batch time idemlab: zero simulated latency, a real SQLite file in
WAL with synchronous=NORMAL, ns per executed journaled step (a pass over
100 fresh items under a new job id) and per skipped step (a pass over 1000
finished items). It only imports the peer and calls init_db and
run_resumable_batch.

Usage: bench_peer.py [--go-bench FILE]
With --go-bench, it reads `go test -bench` output and prints Go/peer ratios.
The peer is $IDEMLAB_PEER, default ../shared/reference/resumable_runner.py
from the repository root.
"""

import argparse
import importlib.util
import os
import re
import sys
import tempfile
import time
from pathlib import Path

EXECUTED_ITEMS = 100  # benchExecutedItems in worker/batch/bench_test.go
SKIPPED_ITEMS = 1000  # benchSkippedItems
TARGET = 0.6


def load_peer(path: Path):
    spec = importlib.util.spec_from_file_location("resumable_runner", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def items(n: int):
    return [{"id": f"item-{i:03d}", "body": f"payload-{i}"} for i in range(1, n + 1)]


def send(item_id: str, digest: str) -> str:
    return f"rcpt-{item_id}-{digest[:8]}"


def measure(peer, min_seconds: float = 2.0):
    """Return (ns per executed step, ns per skipped step), each the mean
    over all rounds, as Go's ns/op is."""
    ex_ns = ex_steps = sk_ns = sk_steps = 0
    with tempfile.TemporaryDirectory() as tmp:
        conn = peer.init_db(Path(tmp) / "journal.sqlite3")
        fresh = items(EXECUTED_ITEMS)
        done = items(SKIPPED_ITEMS)
        peer.run_resumable_batch(conn, "job-skip", done, send)
        job = 0
        deadline = time.perf_counter() + min_seconds
        while time.perf_counter() < deadline:
            job += 1
            t0 = time.perf_counter_ns()
            r = peer.run_resumable_batch(conn, f"job-{job}", fresh, send)
            ex_ns += time.perf_counter_ns() - t0
            ex_steps += r["executed_steps"]
            assert r["executed_steps"] == 3 * EXECUTED_ITEMS
            t0 = time.perf_counter_ns()
            r = peer.run_resumable_batch(conn, "job-skip", done, send)
            sk_ns += time.perf_counter_ns() - t0
            sk_steps += r["skipped_steps"]
            assert r["skipped_steps"] == 3 * SKIPPED_ITEMS
        conn.close()
    return ex_ns / ex_steps, sk_ns / sk_steps


def go_figures(path: str):
    """ns/step of the two Go benchmarks, from go test -bench output."""
    out = {}
    pat = re.compile(r"^(BenchmarkJournalStep(?:Executed|Skipped))(?:-\d+)?\s.*?([\d.]+) ns/step")
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = pat.search(line)
            if m:
                out[m.group(1)] = float(m.group(2))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--go-bench", help="go test -bench output to compare with")
    a = ap.parse_args()
    root = Path(__file__).resolve().parents[2]
    peer_path = Path(os.environ.get("IDEMLAB_PEER", root / ".." / "shared" / "reference" / "resumable_runner.py"))
    if not peer_path.is_file():
        print(f"peer: {peer_path} not found; peer benchmark skipped")
        return 0
    peer = load_peer(peer_path)
    ex, sk = measure(peer)
    print(f"peer (python {sys.version.split()[0]}, sqlite {peer.sqlite3.sqlite_version}): "
          f"executed journaled step {ex / 1000:.1f} µs, skipped step {sk / 1000:.2f} µs (mean)")
    if a.go_bench:
        go = go_figures(a.go_bench)
        for name, theirs in (("BenchmarkJournalStepExecuted", ex), ("BenchmarkJournalStepSkipped", sk)):
            if name not in go:
                print(f"{name}: not in {a.go_bench}; no ratio")
                continue
            ratio = go[name] / theirs
            verdict = "within" if ratio <= TARGET else "OVER"
            print(f"{name}: go {go[name] / 1000:.2f} µs / peer {theirs / 1000:.2f} µs = {ratio:.2f}x ({verdict} target {TARGET}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
