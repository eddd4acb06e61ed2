#!/usr/bin/env python3
"""State at scale: the same 300M-gas Amsterdam blocks run against states of growing size, cold
(page cache dropped, node caches empty) and warm, by gigagas in four designs and by geth 1.17.10.

Per size (entries = accounts + slots, half each; slots over 10,000 contracts, Zipf):
1. `gigagas-bench gen-chain --state-by-chain --mix spread` makes the chain that creates the
   state (fan-out and slot-writer calls; written as chain-state.rlp only for `--geth-state
   import`, `--mix-files-only` otherwise) and BLOCKS blocks of the spread mix
   after it (chain-blocks.rlp: transfers to existing accounts and updates of existing slots, a
   hot set of 1 % drawn half the time and a cold tail over the whole state), each block with
   its BAL; `--state-datadir` keeps gigagas's datadir at the end of the state (a checkpoint of
   the generator's).
2. geth's copy of the state, `--geth-state`: `snap` (the default) — a fresh geth snap-syncs it
   from gigagas serving its checkpoint, pointed over the Engine API at the state part's last
   block (`state-newpayload.json`), the head's root and proofs then compared with gigagas's:
   minutes, as a node joins a network; `import` — `geth init` + `geth import chain-state.rlp`
   (hours at 50M entries on 2 cores). Timed, peak RSS, then `geth db compact`; gigagas's
   state compacted the same way (`gigagas db compact`).
3. Bytes on disk of both states; the disk under gigagas's: random 4 KiB reads of its files on
   1..64 threads, one `pread` at a time a thread, then in io_uring batches of 32 a thread as
   RocksDB's multi-gets read (`gigagas-bench hw --sweep-files [--sweep-batch 32]`).
4. Runs of chain-blocks.rlp, each on a fresh copy of the state (`gigagas db checkpoint`; for
   geth a copy with its table files hard-linked), cold (`sync; echo 3 >
   /proc/sys/vm/drop_caches` as root, a fresh process) or warm (the same run again right
   after, the pages it read still cached):
   - `seq`: the sequential reference, one read at a time (`--bal ignore --prewarm false`);
   - `par-ondemand`: the parallel executor, each worker reading a key when a transaction first
     needs it (`--io on-demand`);
   - `par-bal-qdN`: the parallel executor with every key the BAL names read first on N threads
     of their own (`--io prefetch-parallel --io-depth N`), N swept; N = 0 is the node's
     default, the reads split over the executor's threads and no trie read-ahead;
   - `par-beside-qdN`: the same reads beside execution, in the order the transactions first
     change the keys (`--io prefetch-beside --io-depth N`);
   - `DESIGN-walk` (only when named in --designs, e.g. `seq-walk`): a design above
     with the state root reading the trie nodes it lacks one at a time as its walk meets
     them (`--trie-read-threads 0`) instead of level by level on 16 threads;
   - `geth`: geth's import of the same file.
   Each reports Mgas/s, the import's stage times, the reads the node made (flat state and trie
   nodes), reads issued to the disk and IOPS (/proc/diskstats), peak RSS, and the share of
   execution spent waiting on the state's reads.
   After each design's runs, one more untimed run traces its reads (`strace -e pread64`):
   replayed against an empty page cache, they give the disk requests its cold run will make
   (`disk_reads_traced`, kept with the warm run; `--no-trace` skips it, `--trace-only` makes
   only it and adds it to the design's kept warm run).
5. `gigagas-bench hw --check-state-scale`: the sizing model's cold term against each cold run,
   predicted from the warm run (its time, CPU and traced reads) and the sweeps (the batched one
   for the reads a run made in multi-gets through io_uring).

Needs root (the page cache), geth (testing/geth_install.sh), strace for the traced runs, and
disk: about 900 bytes per entry for gigagas's datadir and 250 for geth's at 10M
(docs/benchmarks.md).

Usage: python3 testing/state_scale.py [--sizes 1m,10m] [--blocks 10] [--depths 0,8,16]
           [--runs 3] [--designs seq,par-bal-qd32,geth] [--work target/state-scale] [--no-geth]
           [--json]
"""

import argparse
import json
import os
import shutil
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gigagas_testing import GigagasNode  # noqa: E402
import interop_snap  # noqa: E402


def parse_size(text):
    text = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in "kmg" else text
    return int(float(digits) * scale)


def measured(cmd, log=None):
    """Runs cmd; returns (wall s, cpu s, peak RSS bytes, stdout, exit code)."""
    start = time.perf_counter()
    err = open(log, "w") if log else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if log:
        err.close()
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, out, \
        os.waitstatus_to_exitcode(status)


def du(path):
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except FileNotFoundError:
                pass
    return total


def disk_of(path):
    """The block device under path (its /proc/diskstats name), or None."""
    dev = os.stat(path).st_dev
    major, minor = os.major(dev), os.minor(dev)
    with open("/proc/diskstats") as f:
        for line in f:
            fields = line.split()
            if int(fields[0]) == major and int(fields[1]) == minor:
                return fields[2]
    # A partition's st_dev may be a mapper: the first non-loop disk then.
    with open("/proc/diskstats") as f:
        for line in f:
            name = line.split()[2]
            if not name.startswith(("loop", "ram")):
                return name
    return None


def disk_reads(device):
    """(reads completed, sectors read) of device."""
    with open("/proc/diskstats") as f:
        for line in f:
            fields = line.split()
            if fields[2] == device:
                return int(fields[3]), int(fields[5])
    return 0, 0


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def clone_tree(src, dst):
    """A copy of src whose immutable table files (*.sst) are hard links, the rest copied (a
    pebble or RocksDB directory that is closed)."""
    for dirpath, _, files in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for f in files:
            s, d = os.path.join(dirpath, f), os.path.join(dst, rel, f)
            if f.endswith(".sst"):
                os.link(s, d)
            else:
                shutil.copy2(s, d)


def install_geth():
    out = subprocess.run(["bash", os.path.join(ROOT, "testing/geth_install.sh")], check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()
    return os.path.join(out[-1], "geth")


def generate(bench, size, blocks, gas, work, prune_every=0, state_files=False):
    """The size's chain and gigagas's state checkpoint, made once; the state part's blocks
    (chain-state.rlp, and chain.rlp with bal.rlp) only with `state_files` (`--geth-state
    import` reads them; a snap-synced geth does not)."""
    chain, base = os.path.join(work, "chain"), os.path.join(work, "gigagas-base")
    info = os.path.join(chain, "info.json")
    if os.path.exists(info) and os.path.isdir(base):
        with open(os.path.join(work, "gen.json")) as f:
            return json.load(f)
    shutil.rmtree(chain, ignore_errors=True)
    shutil.rmtree(base, ignore_errors=True)
    accounts = size // 2
    cmd = [bench, "gen-chain", "--out", chain, "--fork", "amsterdam", "--gas", gas,
           "--blocks", str(blocks), "--mix", "spread", "--state-accounts", str(accounts),
           "--state-slots", str(size - accounts), "--state-by-chain", "--state-datadir", base,
           "--state-prune-every", str(prune_every), "--json"]
    if not state_files:
        cmd.append("--mix-files-only")
    print(f"[{size:,}] generating: {' '.join(cmd)}", file=sys.stderr, flush=True)
    wall, cpu, rss, out, rc = measured(cmd, os.path.join(work, "gen.log"))
    if rc != 0:
        sys.exit(f"gen-chain failed ({rc}); see {work}/gen.log")
    made = json.loads(out)
    mix = [b for b in made["blocks"]][-blocks:]
    gen = {"seconds": wall, "peak_rss": rss, "state_blocks": len(made["blocks"]) - blocks,
           "blocks": blocks, "mix_gas": sum(b["gas_used"] for b in mix),
           "mix_transactions": sum(b["transactions"] for b in mix),
           "transactions_by_kind": made["transactions_by_kind"],
           "state_prunes": made.get("state_prunes", [])}
    with open(os.path.join(work, "gen.json"), "w") as f:
        json.dump(gen, f, indent=1)
    return gen


def compact_state(gigagas, work):
    """gigagas's state compacted once (`gigagas db compact`), as geth's is (`geth db compact`):
    the runs then start from a settled store instead of paying the generator's compaction debt
    (the upper levels it left over their targets) inside the measured blocks."""
    done = os.path.join(work, "gigagas-base-compact.json")
    if os.path.exists(done):
        with open(done) as f:
            return json.load(f)
    shutil.rmtree(os.path.join(work, "run"), ignore_errors=True)  # its links keep old files
    print("compacting gigagas's state", file=sys.stderr, flush=True)
    out = subprocess.run([gigagas, "db", "--datadir", os.path.join(work, "gigagas-base"),
                          "compact"], check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    with open(done, "w") as f:
        json.dump(report, f, indent=1)
    return report


# gen-chain's engine calls naming the state part's last block (`--state-by-chain`).
STATE_CALLS = "state-"


def geth_state(geth, gigagas, work, how, timeout):
    """geth's datadir holding the state, made once (`how`):
    - `import`: `geth init` + `geth import chain-state.rlp` (timed, peak RSS);
    - `snap`: a fresh geth snap-syncs it from gigagas serving a checkpoint of its state
      (`interop_snap.snap_sync`: the state part's last block given as the head over the Engine
      API, geth's pivot 64 below it, its state over snap, the blocks to the head executed), and
      the head's state root and proofs are compared with gigagas's. This is how a node joins a
      network, and at 50M entries it takes minutes where the import takes hours on 2 cores.
    Either way then compacted (`geth db compact`)."""
    base = os.path.join(work, "geth-base")
    done = os.path.join(work, "geth-base.json")
    if os.path.exists(done):
        with open(done) as f:
            return json.load(f)
    shutil.rmtree(base, ignore_errors=True)
    chain = os.path.join(work, "chain")
    if how == "snap":
        state = geth_state_snap(geth, gigagas, work, timeout)
    else:
        if not os.path.exists(os.path.join(chain, "chain-state.rlp")):
            sys.exit(f"state_scale: {chain} holds no chain-state.rlp (generated for a snap-synced "
                     f"geth): remove {work}/gen.json to generate it again")
        subprocess.run([geth, "init", "--datadir", base, os.path.join(chain, "genesis.json")],
                       check=True, capture_output=True)
        print(f"[{work}] geth importing the state's blocks", file=sys.stderr, flush=True)
        wall, cpu, rss, _, rc = measured(
            [geth, "import", "--datadir", base, os.path.join(chain, "chain-state.rlp")],
            os.path.join(work, "geth-state-import.log"))
        if rc != 0:
            sys.exit(f"geth import of the state failed ({rc}); see {work}/geth-state-import.log")
        state = {"method": "import", "import_seconds": wall, "import_peak_rss": rss}
    started = time.perf_counter()
    subprocess.run([geth, "db", "compact", "--datadir", base], check=True, capture_output=True)
    state["compact_seconds"] = time.perf_counter() - started
    with open(done, "w") as f:
        json.dump(state, f, indent=1)
    return state


def geth_state_snap(geth, gigagas, work, timeout):
    """geth-base made by a snap sync from gigagas serving a checkpoint of gigagas-base."""
    chain = os.path.join(work, "chain")
    if not os.path.exists(os.path.join(chain, f"{STATE_CALLS}newpayload.json")):
        sys.exit(f"state_scale: {chain} has no {STATE_CALLS}newpayload.json (made by an older "
                 "gen-chain): generate it again, or give --geth-state import")
    server_dir = fresh_checkpoint(gigagas, work)
    print(f"[{work}] geth snap-syncing the state from gigagas", file=sys.stderr, flush=True)
    server = GigagasNode(gigagas, server_dir,
                         ["--chain", os.path.join(chain, "genesis.json"), "--libp2p.disable",
                          "--disable-discovery", "--addr", "127.0.0.1"],
                         log_path=os.path.join(work, "gigagas-snap-server.log"), timeout=600)
    try:
        result = interop_snap.snap_sync(geth, chain, work, "geth-base", server, timeout,
                                        calls=STATE_CALLS, keep=True)
    finally:
        server.stop()
        shutil.rmtree(server_dir, ignore_errors=True)
    if not (result["synced"] and result.get("state_root_equal") and result.get("proofs_equal")
            and result.get("snap_sync")):
        sys.exit(f"state_scale: geth's snap sync from gigagas failed: {result}; see "
                 f"{work}/geth-base.log")
    return {"method": "snap", "sync_seconds": result["seconds"],
            "sync_peak_rss": int(result["peak_rss_mib"] * 1024 * 1024),
            "snap_version": result.get("snap_version"), "downloaded": result.get("state"),
            "proofs_checked": result.get("proofs_checked")}


def fresh_checkpoint(gigagas, work):
    """work/run: a new checkpoint of the state (`gigagas db checkpoint`), whatever was there."""
    run = os.path.join(work, "run")
    shutil.rmtree(run, ignore_errors=True)
    subprocess.run([gigagas, "db", "--datadir", os.path.join(work, "gigagas-base"),
                    "checkpoint", run], check=True, capture_output=True)
    return run


# RocksDB's `MultiGet` batch (`MultiGetContext::MAX_BATCH_SIZE`): the reads a thread's
# multi-get submits to io_uring together.
MULTI_GET_BATCH = 32


def sweep_files(bench, work, size, batch):
    """`gigagas-bench hw --sweep-files` over the state's files, `batch` reads a thread in flight
    (1: `pread`; more: io_uring batches); None where the kernel refuses io_uring."""
    print(f"[{size:,}] sweeping reads of the state's files"
          + (f" (io_uring batches of {batch})" if batch > 1 else ""), file=sys.stderr, flush=True)
    done = subprocess.run(
        [bench, "hw", "--sweep-files", os.path.join(work, "gigagas-base"), "--sweep-seconds", "2",
         "--sweep-batch", str(batch), "--json"], capture_output=True, text=True)
    if done.returncode != 0:
        if batch > 1 and "io_uring refused" in done.stderr:
            print(f"[{size:,}] {done.stderr.strip()}: no batched sweep", file=sys.stderr)
            return None
        sys.exit(f"state_scale: the sweep failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def gigagas_run(gigagas, work, name, flags, cold, device, threads):
    """One import of chain-blocks.rlp into a fresh checkpoint of the state."""
    run = fresh_checkpoint(gigagas, work)
    if cold:
        drop_caches()
    before = disk_reads(device)
    cmd = [gigagas, "import", os.path.join(work, "chain", "chain-blocks.rlp"), "--datadir", run,
           "--json"] + flags
    wall, cpu, rss, out, rc = measured(cmd, os.path.join(work, f"{name}-{'cold' if cold else 'warm'}.log"))
    after = disk_reads(device)
    if rc != 0:
        sys.exit(f"{name}: gigagas import failed ({rc}): {out[-2000:]}")
    report = json.loads(out)
    blocks = [b for b in report["blocks"] if b["imported"]]
    reads = after[0] - before[0]
    execution_ms = sum(b["execution_ms"] for b in blocks)
    # Waiting on the state's reads: the prefetch (nothing executes meanwhile), or the reads
    # made while executing, spread over the workers that made them.
    if "prefetch-parallel" in flags:
        waited = sum(b["io_ms"] for b in blocks)
    elif "prefetch-beside" in flags:
        # The read-ahead runs beside execution: only the reads execution made itself wait.
        waited = sum(b["read_ms"] - b["ahead_read_ms"] for b in blocks) / threads
    elif "--bal" in flags:
        waited = sum(b["read_ms"] for b in blocks)
    else:
        waited = sum(b["read_ms"] for b in blocks) / threads
    return {
        "design": name, "cold": cold, "mgas_per_s": report["mgas_per_s"],
        "seconds": report["seconds"], "wall_s": wall, "cpu_s": cpu, "peak_rss": rss,
        "gas": report["gas"], "blocks": len(blocks),
        "execution_ms_per_block": execution_ms / len(blocks),
        "state_root_ms_per_block": sum(b["state_root_ms"] for b in blocks) / len(blocks),
        "state_root_beside_ms_per_block": sum(b["state_root_beside_ms"] or 0 for b in blocks)
        / len(blocks),
        "commit_ms_per_block": sum(b["commit_ms"] for b in blocks) / len(blocks),
        "io_ms_per_block": sum(b["io_ms"] for b in blocks) / len(blocks),
        "read_ms_per_block": sum(b["read_ms"] for b in blocks) / len(blocks),
        "read_wait_share": waited / execution_ms if execution_ms else 0.0,
        "store_reads": sum(b["cache_misses"] for b in blocks),
        "trie_node_reads": report.get("trie_node_reads"),
        "batched_reads_io_uring": report.get("batched_reads_io_uring"),
        "disk_reads": reads, "disk_read_bytes": (after[1] - before[1]) * 512,
        "iops": reads / report["seconds"] if report["seconds"] else 0.0,
        # The datadir after the blocks (the state's checkpoint grown by their trie nodes, flat
        # state and history; nothing pruned), its write-ahead log included: RocksDB folds that
        # into tables when the store next opens, so this is an upper bound of the growth.
        "datadir_bytes_after": du(run),
    }


PREAD = re.compile(r"^(\d+)\s+pread64\(\d+<([^>]*)>, (?:[^,]*, (\d+), (\d+)\)|\s*<unfinished)")
PREAD_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. pread64 resumed>[^,]*, (\d+), (\d+)\)")


def traced_reads(gigagas, work, flags, device):
    """The disk reads a cold run of the design will make, from an untimed run that traces its
    reads (`strace -e pread64`, the table files' reads) on a fresh checkpoint, its batches of
    keys read one key at a time (`--batched-reads false`: the same blocks, each by a `pread`,
    where a multi-get would read them through io_uring, which strace does not see): each read
    of a file that was in the checkpoint before the run, replayed against an empty page cache of 4 KiB pages, costs one disk request per run of pages not
    yet read (split at the disk's largest request); a page read before, or a file the run wrote
    itself, costs none. None without strace."""
    if not shutil.which("strace"):
        return None
    run = fresh_checkpoint(gigagas, work)
    cold_files = set(os.listdir(run))
    # strace names files by their resolved absolute path.
    run_path = os.path.realpath(run)
    trace = os.path.join(work, "reads.trace")
    cmd = ["strace", "-f", "-qq", "-y", "-s", "0", "-e", "trace=pread64", "-e", "signal=none",
           "-o", trace, gigagas, "import", os.path.join(work, "chain", "chain-blocks.rlp"),
           "--datadir", run, "--json", "--batched-reads", "false"] + flags
    subprocess.run(cmd, check=True, capture_output=True)
    largest = 512 * 1024
    try:
        parent = os.path.basename(os.path.realpath(f"/sys/class/block/{device}/.."))
        for name in (device, parent):
            path = f"/sys/class/block/{name}/queue/max_sectors_kb"
            if os.path.exists(path):
                with open(path) as f:
                    largest = int(f.read()) * 1024
                break
    except OSError:
        pass
    page = 4096
    seen, pending = {}, {}
    stats = {"preads": 0, "pages": 0, "requests": 0}

    def replay(path, count, offset):
        stats["preads"] += 1
        name = os.path.basename(path)
        if os.path.dirname(path) != run_path or name not in cold_files:
            return
        pages = seen.setdefault(name, set())
        missing = 0
        for p in range(offset // page, (offset + max(count, 1) - 1) // page + 1):
            if p in pages:
                stats["requests"] += -(-missing * page // largest)
                missing = 0
            else:
                pages.add(p)
                stats["pages"] += 1
                missing += 1
        stats["requests"] += -(-missing * page // largest)

    with open(trace) as f:
        for line in f:
            m = PREAD.match(line)
            if m:
                if m.group(3) is None:
                    pending[m.group(1)] = m.group(2)
                else:
                    replay(m.group(2), int(m.group(3)), int(m.group(4)))
                continue
            m = PREAD_RESUMED.match(line)
            if m and m.group(1) in pending:
                replay(pending.pop(m.group(1)), int(m.group(2)), int(m.group(3)))
    os.remove(trace)
    return {"traced_preads": stats["preads"], "traced_pages": stats["pages"],
            "disk_reads_traced": stats["requests"]}


def geth_run(geth, work, cold, device):
    run = os.path.join(work, "geth-run")
    shutil.rmtree(run, ignore_errors=True)
    clone_tree(os.path.join(work, "geth-base"), run)
    if cold:
        drop_caches()
    before = disk_reads(device)
    log = os.path.join(work, f"geth-{'cold' if cold else 'warm'}.log")
    wall, cpu, rss, _, rc = measured(
        [geth, "import", "--datadir", run, os.path.join(work, "chain", "chain-blocks.rlp")], log)
    after = disk_reads(device)
    if rc != 0:
        sys.exit(f"geth import failed ({rc}); see {log}")
    seconds = wall
    with open(log) as f:
        for line in f:
            # "Import done in 12.345s." — the import itself, without opening the database.
            if "Import done in" in line:
                seconds = parse_go_duration(line.split("Import done in", 1)[1].strip().rstrip("."))
    return {"design": "geth", "cold": cold, "seconds": seconds, "wall_s": wall, "cpu_s": cpu,
            "peak_rss": rss, "disk_reads": after[0] - before[0],
            "disk_read_bytes": (after[1] - before[1]) * 512,
            "iops": (after[0] - before[0]) / seconds if seconds else 0.0}


def repeated(runs, once):
    """once(cold) run `runs` times, cold then warm each time; [(cold, the median run)]."""
    repeats = {True: [], False: []}
    for _ in range(max(1, runs)):
        for cold in (True, False):
            repeats[cold].append(once(cold))
    return [(cold, median_run(repeats[cold])) for cold in (True, False)]


def median_run(runs):
    """The run of median Mgas/s (the lower middle of an even count), with every run's Mgas/s."""
    ordered = sorted(runs, key=lambda r: r["mgas_per_s"])
    kept = dict(ordered[(len(ordered) - 1) // 2])
    kept["runs_mgas_per_s"] = [r["mgas_per_s"] for r in runs]
    return kept


def parse_go_duration(text):
    """Seconds of a Go duration string such as 1m2.5s, 850ms or 3.2s."""
    total, number = 0.0, ""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}
    i = 0
    text = text.split()[0]
    while i < len(text):
        c = text[i]
        if c.isdigit() or c == ".":
            number += c
            i += 1
            continue
        unit = text[i:i + 2] if text[i:i + 2] in units else c
        total += float(number or 0) * units.get(unit, 0)
        number, i = "", i + len(unit)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1m,10m", help="entries per state, comma-separated")
    ap.add_argument("--blocks", type=int, default=10, help="spread-mix blocks measured")
    ap.add_argument("--gas", default="300M", help="gas per measured block")
    ap.add_argument("--depths", default="0,8,16",
                    help="read threads of the BAL's reads, comma-separated (0: the executor's)")
    ap.add_argument("--work", default=os.path.join(ROOT, "target/state-scale"))
    ap.add_argument("--gigagas", default=os.path.join(ROOT, "target/release/gigagas"))
    ap.add_argument("--bench", default=os.path.join(ROOT, "target/release/gigagas-bench"))
    ap.add_argument("--geth", help="geth binary (default: testing/geth_install.sh)")
    ap.add_argument("--no-geth", action="store_true", help="gigagas only")
    ap.add_argument("--geth-state", choices=["snap", "import"], default="snap",
                    help="how geth comes to hold the state: snap-synced from gigagas (minutes) "
                    "or by importing the blocks that create it (hours at 50M on 2 cores)")
    ap.add_argument("--geth-sync-timeout", type=int, default=7200,
                    help="seconds geth's snap sync of the state may take")
    ap.add_argument("--designs", help="only these runs, comma-separated (seq, par-ondemand, "
                    "par-bal-qdN, par-beside-qdN, geth)")
    ap.add_argument("--runs", type=int, default=1,
                    help="runs of each design, cold then warm; the run of median Mgas/s is kept")
    ap.add_argument("--prune-every", type=int, default=2500,
                    help="state blocks between the generator's prunes of superseded trie nodes")
    ap.add_argument("--prune-from", type=parse_size, default=parse_size("50m"),
                    help="prune while generating states of at least this many entries (smaller "
                    "ones fit the disk unpruned)")
    ap.add_argument("--no-trace", action="store_true",
                    help="skip the traced run of each design (the disk reads the model's check "
                    "expects; needs strace)")
    ap.add_argument("--trace-only", action="store_true",
                    help="only the traced run of each design, added to the design's warm run "
                    "kept in state-scale.json (for runs made with --no-trace)")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("state_scale: dropping the page cache needs root")
    geth = None if args.no_geth else (args.geth or install_geth())
    threads = os.cpu_count()
    results = []
    for size in [parse_size(s) for s in args.sizes.split(",")]:
        work = os.path.join(args.work, f"scale-{size}")
        os.makedirs(work, exist_ok=True)
        device = disk_of(work)
        gen = generate(args.bench, size, args.blocks, args.gas, work,
                       args.prune_every if size >= args.prune_from else 0,
                       state_files=bool(geth) and args.geth_state == "import")
        entry = {"entries": size, "generation": gen,
                 "compaction": compact_state(args.gigagas, work),
                 "gigagas_bytes": du(os.path.join(work, "gigagas-base")), "runs": []}
        if geth:
            entry["geth_state"] = geth_state(geth, args.gigagas, work, args.geth_state,
                                             args.geth_sync_timeout)
            entry["geth_bytes"] = du(os.path.join(work, "geth-base", "geth"))
        only = set(args.designs.split(",")) if args.designs else None
        if not args.trace_only and (not only or only - {"geth"}):
            # The disk under the state: random reads of its files at queue depth 1..64, one
            # `pread` at a time a thread, and in io_uring batches as RocksDB's multi-gets read:
            # the model's IOPS for the check below.
            entry["sweep"] = sweep_files(args.bench, work, size, 1)
            batched = sweep_files(args.bench, work, size, MULTI_GET_BATCH)
            if batched:
                entry["sweep_batched"] = batched
        designs = [("seq", ["--bal", "ignore", "--prewarm", "false"]),
                   ("par-ondemand", ["--io", "on-demand"])]
        designs += [(f"par-bal-qd{d}", ["--io", "prefetch-parallel", "--io-depth", d])
                    for d in args.depths.split(",")]
        # Beside execution needs read threads of its own: at depth 0 it is par-bal-qd0.
        designs += [(f"par-beside-qd{d}", ["--io", "prefetch-beside", "--io-depth", d])
                    for d in args.depths.split(",") if int(d) > 0]
        # Only when named: each with the state root reading the nodes it lacks one at a time as
        # its walk meets them, as before the root's level-by-level reads.
        designs += [(f"{name}-walk", flags + ["--trie-read-threads", "0"])
                    for name, flags in designs]
        for name, flags in designs:
            if (only and name not in only) or (not only and name.endswith("-walk")):
                continue
            if args.trace_only:
                traced = traced_reads(args.gigagas, work, flags, device)
                if traced is None:
                    sys.exit("state_scale: --trace-only needs strace")
                entry.setdefault("traced", {})[name] = traced
                print(f"[{size:,}] {name:<17} traced: {traced['disk_reads_traced']} disk reads",
                      file=sys.stderr, flush=True)
                continue
            medians = repeated(args.runs, lambda cold: gigagas_run(
                args.gigagas, work, name, flags, cold, device, threads))
            # The reads the model's check expects of the cold run, traced in a run of its own.
            traced = None if args.no_trace else traced_reads(args.gigagas, work, flags, device)
            if traced:
                entry.setdefault("traced", {})[name] = traced
            for cold, r in medians:
                # The disk as swept at the start of this invocation: the check predicts each
                # run with the sweep taken beside it (a later invocation's may differ).
                for key in ("sweep", "sweep_batched"):
                    if key in entry:
                        r[key] = entry[key]
                entry["runs"].append(r)
                print(f"[{size:,}] {name:<17} {'cold' if cold else 'warm'}: "
                      f"{r['mgas_per_s']:8.1f} Mgas/s  exec {r['execution_ms_per_block']:7.1f} ms"
                      f"  root {r['state_root_ms_per_block']:7.1f} ms  reads {r['disk_reads']:>8}"
                      f"  {r['iops']:8.0f} IOPS  wait {r['read_wait_share']:.2f}"
                      f"  runs {[round(x, 1) for x in r['runs_mgas_per_s']]}",
                      file=sys.stderr, flush=True)
        if geth and not args.trace_only and (not only or "geth" in only):
            def geth_once(cold):
                r = geth_run(geth, work, cold, device)
                r["mgas_per_s"] = gen["mix_gas"] / r["seconds"] / 1e6
                return r

            for cold, r in repeated(args.runs, geth_once):
                entry["runs"].append(r)
                print(f"[{size:,}] geth           {'cold' if cold else 'warm'}: "
                      f"{r['mgas_per_s']:8.1f} Mgas/s  {r['seconds']:.1f} s  reads "
                      f"{r['disk_reads']:>8}  {r['iops']:8.0f} IOPS"
                      f"  runs {[round(x, 1) for x in r['runs_mgas_per_s']]}",
                      file=sys.stderr, flush=True)
        shutil.rmtree(os.path.join(work, "run"), ignore_errors=True)
        shutil.rmtree(os.path.join(work, "geth-run"), ignore_errors=True)
        results.append(entry)
        # Kept per size: a later run of other sizes (or designs) adds to the file.
        path = os.path.join(args.work, "state-scale.json")
        kept = {}
        if os.path.exists(path):
            with open(path) as f:
                kept = {e["entries"]: e for e in json.load(f)["sizes"]}
        old = kept.get(size)
        if old and (only or args.trace_only):
            entry.setdefault("sweep", old.get("sweep"))
            if old.get("sweep_batched"):
                entry.setdefault("sweep_batched", old["sweep_batched"])
            done = {(r["design"], r["cold"]) for r in entry["runs"]}
            entry["runs"] = [r for r in old["runs"] if (r["design"], r["cold"]) not in done] \
                + entry["runs"]
        # Each traced run goes with its design's warm run (this invocation's, or the kept one).
        for name, traced in entry.pop("traced", {}).items():
            for r in entry["runs"]:
                if r["design"] == name and not r["cold"]:
                    r.update(traced)
        kept[size] = entry
        with open(path, "w") as f:
            json.dump({"sizes": [kept[k] for k in sorted(kept)]}, f, indent=1)
    # The model's cold term against the cold runs: each predicted from its warm run's time and
    # reads and the sweep of the state's files (`gigagas-bench hw --check-state-scale`).
    path = os.path.join(args.work, "state-scale.json")
    check = [args.bench, "hw", "--check-state-scale", path]
    if args.json:
        done = subprocess.run(check + ["--json"], capture_output=True, text=True)
        model_check = json.loads(done.stdout) if done.returncode == 0 else None
        print(json.dumps({"sizes": results, "model_check": model_check}, indent=1))
    else:
        subprocess.run(check)
        print(f"{'entries':>12} {'design':<17} {'cold':>10} {'warm':>10} {'cold/warm':>9}")
        for e in results:
            by = {}
            for r in e["runs"]:
                by.setdefault(r["design"], {})["cold" if r["cold"] else "warm"] = r["mgas_per_s"]
            for design, v in by.items():
                ratio = v.get("cold", 0) / v["warm"] if v.get("warm") else 0
                print(f"{e['entries']:>12,} {design:<17} {v.get('cold', 0):10.1f} "
                      f"{v.get('warm', 0):10.1f} {ratio:9.2f}")


if __name__ == "__main__":
    main()
