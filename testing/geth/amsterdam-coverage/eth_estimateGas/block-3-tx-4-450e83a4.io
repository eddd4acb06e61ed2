// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 4 0x450e83a44669ca28fd2cd5b4af2665b5e6c4a8ae8c17786c31f930ce80a2d1a8 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"from":"0x741de89325a90cb62d2bc63d808d5ccfd53877d0","to":"0xcaec8fd234c4e1b77404d5af1c835d99024488bd","value":"0x0","input":"0x","nonce":"0x3","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x2"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x3a98"}
