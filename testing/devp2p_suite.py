#!/usr/bin/env python3
"""geth 1.17.10's devp2p conformance suites against a gigagas node, as hive's devp2p simulator
runs them.

The suites are go-ethereum's `devp2p rlpx eth-test`, `snap-test` and `snap2-test`
(cmd/devp2p/internal/ethtest). Their chain is the module's own testdata (genesis.json,
chain.rlp: 600 blocks from Cancun to Amsterdam, headfcu.json, txinfo.json), read from the Go
module cache (`go mod download`). The chain is imported once (`gigagas init` + `gigagas
import`) into a template datadir; every test then runs against a fresh node on a copy of it
(devp2p on a loopback port, no discovery, no libp2p), told the head with headfcu.json over the
Engine API first, as hive does. Each test gets `--timeout` seconds; a test that hangs counts as
failed. The test names come from the suite's source (`EthTests`, `SnapTests`, `Snap2Tests`).

A test that logs "skipping" (eth/72's tests against a node below eth/72) passed without
testing anything: it is reported as SKIP, not as passed.

Prints one line per test and a summary per suite; `--json` prints the summary as JSON; logs
(the node's and the suite's) go to `--out`. Exit code 1 when a test fails. `--geth-reference`
runs the same tests against geth (its own node on the same chain) for comparison.

Usage: testing/.venv/bin/python testing/devp2p_suite.py [--suites eth,snap,snap2]
           [--run REGEX] [--gigagas target/release/gigagas] [--out target/devp2p-suite]
           [--timeout 180] [--geth-reference] [--json]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gigagas_testing import GethNode, GigagasNode, NodeError, geth_binary  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GETH_MODULE = "github.com/ethereum/go-ethereum@v1.17.10"
SUITES = {"eth": ("eth-test", "EthTests"), "snap": ("snap-test", "SnapTests"),
          "snap2": ("snap2-test", "Snap2Tests")}


def module_dir():
    """go-ethereum v1.17.10's source in the Go module cache (downloaded on first use)."""
    out = subprocess.run(["go", "mod", "download", "-json", GETH_MODULE], check=True,
                         capture_output=True, text=True, cwd=tempfile.gettempdir()).stdout
    return json.loads(out)["Dir"]


def suite_tests(ethtest, function):
    """The test names `function` (e.g. `EthTests`) of suite.go lists, in order."""
    with open(os.path.join(ethtest, "suite.go")) as f:
        source = f.read()
    body = re.search(r"func \(s \*Suite\) " + function + r"\(\)[^{]*\{(.*?)\n\}", source, re.S)
    if not body:
        raise SystemExit(f"devp2p_suite: no {function} in suite.go")
    return re.findall(r'\{Name: "([^"]+)"', body.group(1))


def run_test(devp2p, command, name, testdata, node, timeout, log_path):
    """One test of one suite against `node` (its enode, Engine API and JWT secret): passed,
    and the suite's output."""
    cmd = [devp2p, "rlpx", command, "--run", f"^{re.escape(name)}$", "--tap", "--node", node.enode,
           "--chain", testdata, "--engineapi", node.engine_url, "--jwtsecret", node.secret]
    start = time.time()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        text, code = out.stdout + out.stderr, out.returncode
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        text += f"\n(timed out after {timeout} s)"
        code = None
    with open(log_path, "w") as f:
        f.write(" ".join(cmd) + "\n" + text)
    passed = code == 0 and re.search(r"^ok \d+ ", text, re.M) is not None
    # A test that does not apply to what the node negotiated (eth/72's, below eth/72) logs
    # "skipping" and passes without testing anything: reported apart.
    skipped = passed and re.search(r"^#\s*skipping", text, re.M) is not None
    return passed, skipped, time.time() - start, text


def first_failure_line(text):
    """The most telling line of a failed test's output."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if re.search(r"(fail|error|unexpected|expected|timed out|mismatch)", ln, re.I) and \
                not ln.startswith(("1..", "ok ", "not ok ")):
            return ln[:200]
    return lines[-1][:200] if lines else ""


def gigagas_template(gigagas, testdata, work):
    """A datadir holding the suite's chain, imported once."""
    datadir = os.path.join(work, "template")
    genesis = os.path.join(testdata, "genesis.json")
    subprocess.run([gigagas, "init", "--genesis", genesis, "--datadir", datadir], check=True,
                   capture_output=True)
    out = subprocess.run([gigagas, "import", os.path.join(testdata, "chain.rlp"), "--datadir",
                          datadir], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"devp2p_suite: gigagas import failed:\n{out.stderr[-2000:]}")
    return datadir


def start_gigagas(gigagas, template, testdata, work, label):
    datadir = os.path.join(work, label)
    shutil.rmtree(datadir, ignore_errors=True)
    shutil.copytree(template, datadir)
    return GigagasNode(gigagas, datadir, ["--chain", os.path.join(testdata, "genesis.json"),
                                          "--libp2p.disable", "--disable-discovery",
                                          "--addr", "127.0.0.1"],
                       log_path=os.path.join(work, f"{label}.node.log"))


def start_geth(geth, testdata, work, label):
    datadir = os.path.join(work, label)
    shutil.rmtree(datadir, ignore_errors=True)
    GethNode.init(geth, datadir, os.path.join(testdata, "genesis.json"))
    subprocess.run([geth, "import", "--datadir", datadir, os.path.join(testdata, "chain.rlp")],
                   check=True, capture_output=True)
    return GethNode(geth, datadir, ["--nat", "none"], http_api="eth,net,web3,admin",
                    log_path=os.path.join(work, f"{label}.node.log"), p2p=True)


def send_head(node, testdata):
    """headfcu.json's forkchoice update, as hive sends it before the suite."""
    with open(os.path.join(testdata, "headfcu.json")) as f:
        fcu = json.load(f)
    node.engine(fcu["method"], *fcu["params"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suites", default="eth,snap,snap2")
    ap.add_argument("--run", default=None, help="only the tests whose name matches REGEX")
    ap.add_argument("--gigagas", default=os.path.join(ROOT, "target/release/gigagas"))
    ap.add_argument("--geth", help="geth binary (default: testing/geth_install.sh)")
    ap.add_argument("--out", default=os.path.join(ROOT, "target/devp2p-suite"))
    ap.add_argument("--timeout", type=int, default=180, help="seconds per test")
    ap.add_argument("--geth-reference", action="store_true",
                    help="run the tests against geth instead of gigagas")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    geth = geth_binary(args.geth)
    devp2p = os.path.join(os.path.dirname(geth), "devp2p")
    if not os.access(devp2p, os.X_OK):
        raise SystemExit(f"devp2p_suite: no devp2p beside {geth} (testing/geth_install.sh "
                         "installs it)")
    ethtest = os.path.join(module_dir(), "cmd/devp2p/internal/ethtest")
    testdata = os.path.join(ethtest, "testdata")
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="devp2p-suite-", dir=args.out)
    client = "geth" if args.geth_reference else "gigagas"
    template = None if args.geth_reference else gigagas_template(args.gigagas, testdata, work)

    results = {}
    failed = 0
    for suite in [s for s in args.suites.split(",") if s]:
        command, function = SUITES[suite]
        names = suite_tests(ethtest, function)
        if args.run:
            names = [n for n in names if re.search(args.run, n)]
        rows = []
        for name in names:
            label = f"{suite}-{name}"
            try:
                node = (start_geth(geth, testdata, work, label) if args.geth_reference
                        else start_gigagas(args.gigagas, template, testdata, work, label))
            except NodeError as e:
                rows.append({"test": name, "passed": False, "seconds": 0.0,
                             "why": f"node did not start: {str(e)[:200]}"})
                continue
            try:
                send_head(node, testdata)
                passed, skipped, seconds, text = run_test(devp2p, command, name, testdata, node,
                                                 args.timeout,
                                                 os.path.join(work, f"{label}.suite.log"))
            finally:
                node.stop()
                shutil.rmtree(os.path.join(work, label), ignore_errors=True)
            row = {"test": name, "passed": passed, "skipped": skipped,
                   "seconds": round(seconds, 1)}
            if not passed:
                row["why"] = first_failure_line(text)
            elif skipped:
                row["why"] = next((ln.lstrip("# ").strip() for ln in text.splitlines()
                                   if "skipping" in ln), "")
            rows.append(row)
            if not args.json:
                mark = "SKIP" if skipped else "PASS" if passed else "FAIL"
                print(f"{suite:5} {name:34} {mark} {seconds:6.1f} s  {row.get('why', '')}",
                      flush=True)
        passed = sum(r["passed"] and not r.get("skipped") for r in rows)
        skipped = sum(bool(r.get("skipped")) for r in rows)
        failed += sum(not r["passed"] for r in rows)
        results[suite] = {"passed": passed, "skipped": skipped, "total": len(rows),
                          "tests": rows}
        if not args.json:
            print(f"{suite}: {passed} of {len(rows)} passed, {skipped} skipped as not applying "
                  f"to the negotiated version ({client})", flush=True)

    summary = {"client": client, "geth_module": GETH_MODULE, "suites": results, "logs": work}
    with open(os.path.join(args.out, f"summary-{client}.json"), "w") as f:
        json.dump(summary, f, indent=1)
    if args.json:
        print(json.dumps(summary, indent=1))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
