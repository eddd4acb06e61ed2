// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 2 0x1262fce58d6ec056a9defb429182d80f3a44529ac34ba7a4fb0f5cf0fdedcfb0 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"from":"0x3cad63d4b6f5800300f43759963c929b381e4604","value":"0x0","input":"0x62000007600e5f39620000075ff34b6001015f5500","nonce":"0x2","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x1"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x3614e"}
