"""Node processes for the test scripts: `gigagas node` and geth, each ready when it can serve.

`GigagasNode` passes `--ready-file`: the node writes that JSON file once every server is bound
(JSON-RPC, Engine API, p2p, metrics), naming the endpoints, so that the launcher reads where the
node serves instead of scraping its log. `GethNode` waits on geth's JSON-RPC.
"""

import json
import os
import signal
import subprocess
import threading
import time
import urllib.request

from .rpc import engine_call, free_port, json_rpc


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def geth_binary(given=None):
    """`given`, else geth 1.17.10 as testing/geth_install.sh installs it (into ~/.cache)."""
    if given:
        return given
    folder = subprocess.run([os.path.join(ROOT, "testing/geth_install.sh")], check=True,
                            capture_output=True, text=True).stdout.strip().splitlines()[-1]
    return os.path.join(folder, "geth")


class NodeError(SystemExit):
    """A node that did not start (or not in time); its message ends with the log's tail."""


class _Process:
    """A child process whose output lines (stderr and stdout) are kept in `log` and, with
    `log_path`, written to that file as they come."""

    def __init__(self, cmd, log_path=None, env=None):
        self.log = []
        self.log_path = log_path
        self._file = open(log_path, "w") if log_path else None
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, errors="replace", env=env)
        self._drain = threading.Thread(target=self._read, daemon=True)
        self._drain.start()

    def _read(self):
        for line in self.proc.stdout:
            self.log.append(line)
            if self._file:
                self._file.write(line)
                self._file.flush()

    def alive(self):
        return self.proc.poll() is None

    def text(self):
        """Everything logged so far."""
        return "".join(self.log)

    def tail(self, lines=30):
        return "".join(self.log[-lines:])

    def stop(self, sig=signal.SIGTERM, timeout=120):
        """Sends `sig` and waits for the exit (SIGKILL after `timeout` seconds)."""
        if self.alive():
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._drain.join(timeout=5)
        if self._file:
            self._file.close()
            self._file = None

    def kill(self):
        """SIGKILL: a crash, nothing flushed."""
        self.stop(signal.SIGKILL, timeout=30)


class _Node(_Process):
    """A node process with a JSON-RPC endpoint (`url`) and an Engine API (`engine_url`, JWT
    secret `secret`)."""

    id = 0

    def rpc(self, method, *params):
        """One JSON-RPC call's result."""
        self.id += 1
        return json_rpc(self.url, method, params, self.id)

    def engine(self, method, *params):
        """One Engine API call's result (with a fresh JWT)."""
        return engine_call(self.engine_url, self.secret, method, *params)

    def head(self):
        """`eth_blockNumber`, as an int."""
        return int(self.rpc("eth_blockNumber"), 16)


class GigagasNode(_Node):
    """`gigagas node` on `datadir` with `flags`, its JSON-RPC and Engine API on loopback (ports
    chosen by the OS unless given), Prometheus metrics on a free port with `metrics=True`.

    Ready when the node has written its ready file: then `url` (JSON-RPC), `engine_url`,
    `jwt_path` and `secret` (the Engine API's JWT secret, hex), `enode` (the devp2p URL), `enr`
    (the record `admin_nodeInfo` shows), `discv5_enr` (with discovery v5 on), `p2p`
    (the libp2p listen address, None without a network), `proposer` (the gossip signer's public
    key, if any) and
    `metrics_url` are set. NodeError when the process exits first or `timeout` seconds pass."""

    def __init__(self, gigagas, datadir, flags=(), *, metrics=False, http_port=0,
                 authrpc_port=0, log_path=None, env=None, timeout=120):
        os.makedirs(datadir, exist_ok=True)
        self.datadir = datadir
        self.ready_file = os.path.join(datadir, "ready.json")
        if os.path.exists(self.ready_file):
            os.remove(self.ready_file)
        self.metrics_addr = metrics if isinstance(metrics, str) else (
            f"127.0.0.1:{free_port()}" if metrics else None)
        cmd = [gigagas, "node", "--datadir", datadir, "--http.port", str(http_port),
               "--authrpc.port", str(authrpc_port), "--ready-file", self.ready_file]
        # The namespaces the harnesses read beside eth (admin for peers and the node's
        # records, debug and txpool for comparisons with geth); never `testing`.
        if "--http.api" not in flags:
            cmd += ["--http.api", "eth,net,web3,admin,debug,txpool"]
        # devp2p listens on an OS-chosen port unless the caller names one (many nodes share
        # this machine); the enode is in the ready file.
        if "--port" not in flags:
            cmd += ["--port", "0"]
        if self.metrics_addr:
            cmd += ["--metrics", self.metrics_addr]
        super().__init__(cmd + list(flags), log_path, env)
        deadline = time.time() + timeout
        while not os.path.exists(self.ready_file):
            if not self.alive():
                self._drain.join(timeout=5)
                raise NodeError(f"gigagas node did not start (exit {self.proc.returncode}):\n"
                                f"{self.tail()}")
            if time.time() > deadline:
                self.stop(signal.SIGKILL)
                raise NodeError(f"gigagas node not ready in {timeout} s:\n{self.tail()}")
            time.sleep(0.05)
        with open(self.ready_file) as f:
            self.info = json.load(f)
        self.url = self.info["http"]
        self.engine_url = self.info["authrpc"]
        self.jwt_path = self.info["jwt_secret"]
        with open(self.jwt_path) as f:
            self.secret = f.read().strip()
        self.p2p = self.info.get("p2p")
        self.enode = self.info.get("enode")
        self.enr = self.info.get("enr")
        self.discv5_enr = self.info.get("discv5_enr")
        self.proposer = self.info.get("proposer")
        self.metrics_url = self.info.get("metrics")

    def metrics(self):
        """The Prometheus exposition text."""
        with urllib.request.urlopen(self.metrics_url, timeout=10) as r:
            return r.read().decode()


class GethNode(_Node):
    """geth (1.17.10, testing/geth_install.sh) on a datadir already initialized (`init`), with
    JSON-RPC (`http_api`) and its authenticated Engine API on free loopback ports; no peers
    unless `p2p=True` (then devp2p on a free loopback port, no discovery unless
    `discovery=True`, `enode` set from `admin_nodeInfo`, which needs `admin` in `http_api`);
    `--syncmode` is `syncmode` (full by default).
    Ready when its JSON-RPC answers; NodeError when it exits first or `timeout` seconds pass."""

    @staticmethod
    def init(geth, datadir, genesis):
        subprocess.run([geth, "init", "--datadir", datadir, genesis], check=True,
                       capture_output=True)

    def __init__(self, geth, datadir, flags=(), *, http_api="eth,net,web3", log_path=None,
                 timeout=60, p2p=False, discovery=False, syncmode="full"):
        self.jwt_path = os.path.join(datadir, "jwt.hex")
        self.secret = os.urandom(32).hex()
        with open(self.jwt_path, "w") as f:
            f.write(self.secret)
        auth, http = free_port(), free_port()
        self.engine_url, self.url = f"http://127.0.0.1:{auth}", f"http://127.0.0.1:{http}"
        cmd = [geth, "--datadir", datadir, "--authrpc.addr", "127.0.0.1", "--authrpc.port",
               str(auth), "--authrpc.jwtsecret", self.jwt_path, "--http", "--http.addr",
               "127.0.0.1", "--http.port", str(http), "--http.api", http_api,
               *([] if discovery else ["--nodiscover"]),
               "--maxpeers", "50" if p2p else "0", "--port", str(free_port()), "--syncmode",
               syncmode, "--ipcdisable"] + list(flags)
        super().__init__(cmd, log_path)
        deadline = time.time() + timeout
        while True:
            try:
                json_rpc(self.url, "eth_blockNumber", [])
                if p2p:
                    self.enode = json_rpc(self.url, "admin_nodeInfo", [])["enode"]
                return
            except Exception:  # noqa: BLE001 - not up yet
                if not self.alive():
                    self._drain.join(timeout=5)
                    raise NodeError(f"geth did not start:\n{self.tail()}")
                if time.time() > deadline:
                    self.stop(signal.SIGKILL)
                    raise NodeError(f"geth's JSON-RPC did not answer in {timeout} s:\n{self.tail()}")
                time.sleep(0.1)
