// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 9 0xe69a820b2cc04c2820637ea3157845b58a596408c5f8d5e7889a67de69e19a51 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"from":"0x1322bd55beaf251e963871f1cd308f2052a1b495","to":"0xfb81e67278f94efbf3d93ab4353cf6ef4f78ae53","value":"0x4d","input":"0x000000000000000000000000fb81e67278f94efbf3d93ab4353cf6ef4f78ae53","nonce":"0x1","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x2"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x37ec8"}
