"""What the test scripts of testing/ share: starting a gigagas node (or geth) and talking to it.

- `rpc`: JSON-RPC calls, Engine API calls with a JWT, free loopback ports, Prometheus samples;
- `node`: `GigagasNode`, a `gigagas node` process that is ready once it has written its ready
  file (every server bound: the file names the endpoints), and `GethNode`, geth 1.17.10 ready
  once its JSON-RPC answers; `geth_binary`, geth installed by testing/geth_install.sh.

Scripts put testing/ on `sys.path` and `from gigagas_testing import GigagasNode, json_rpc`.
"""

from .node import GethNode, GigagasNode, NodeError, geth_binary
from .rpc import engine_call, free_port, json_rpc, jwt_token, metric

__all__ = ["GethNode", "GigagasNode", "NodeError", "engine_call", "free_port", "geth_binary",
           "json_rpc", "jwt_token", "metric"]
