// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 8 0x6f2588aba0e5efde11900ad89c774414fe262c85cac757d3e92d06a7d703dc19 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"from":"0x1322bd55beaf251e963871f1cd308f2052a1b495","to":"0xfb81e67278f94efbf3d93ab4353cf6ef4f78ae53","gas":"0x7a120","value":"0x3e7","input":"0x000000000000000000000000e8acb0bd6990eee2fdf89209f23ff1728fa2550a","nonce":"0x0","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x2"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x"}
