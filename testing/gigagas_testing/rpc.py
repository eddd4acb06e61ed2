"""JSON-RPC and Engine API calls, free loopback ports, Prometheus samples."""

import base64
import hashlib
import hmac
import json
import socket
import time
import urllib.request


def json_rpc(url, method, params, id=1, timeout=30):
    """The result of one JSON-RPC call; RuntimeError naming the method on an error answer."""
    body = json.dumps({"jsonrpc": "2.0", "id": id, "method": method,
                       "params": list(params)}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        answer = json.load(r)
    if "error" in answer:
        raise RuntimeError(f"{method}: {answer['error']}")
    return answer["result"]


def jwt_token(secret_hex):
    """An Engine API bearer token (HS256, `iat` now) for the hex JWT secret `secret_hex`."""
    def b64(b):
        return base64.urlsafe_b64encode(b).rstrip(b"=")
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps({"iat": int(time.time())}).encode())
    sig = hmac.new(bytes.fromhex(secret_hex.strip().removeprefix("0x")), head + b"." + body,
                   hashlib.sha256).digest()
    return (head + b"." + body + b"." + b64(sig)).decode()


def engine_call(url, secret_hex, method, *params, timeout=30):
    """The result of one authenticated Engine API call; RuntimeError on an error answer."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})
    req = urllib.request.Request(url, body.encode(), {
        "Content-Type": "application/json", "Authorization": f"Bearer {jwt_token(secret_hex)}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        answer = json.load(r)
    if "error" in answer:
        raise RuntimeError(f"{method}: {answer['error']}")
    return answer["result"]


_PORTS_GIVEN = set()


def free_port():
    """A free TCP port on loopback, never one this process was given before: the OS may hand
    a port that was just released out again, and two services of one devnet would collide."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _PORTS_GIVEN:
            _PORTS_GIVEN.add(port)
            return port


def metric(text, name, labels=""):
    """The value of a Prometheus sample `name{labels}` (summed over matching series; 0 when
    absent)."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and labels in line and not line.startswith("#"):
            head, value = line.rsplit(" ", 1)
            if head.split("{")[0] == name:
                total += float(value)
    return total
