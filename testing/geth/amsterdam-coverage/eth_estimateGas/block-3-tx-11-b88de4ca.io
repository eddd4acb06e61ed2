// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 11 0xb88de4ca2136367a74f5888056555201241e16b5c289f9c4d319b0eea6d83dc4 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"from":"0x1322bd55beaf251e963871f1cd308f2052a1b495","to":"0x44dfd7fb1f03a143ef8732da51635d843f6ece2f","value":"0x0","input":"0x","nonce":"0x3","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x2"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x4ec6"}
