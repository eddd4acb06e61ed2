// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 10 0x19a1b31f95557cd0becdadd5b96b42bfc4cea0f36635c10c44b96ecc7034c3d2 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"from":"0x1322bd55beaf251e963871f1cd308f2052a1b495","to":"0x4209ffa3c7030bd2a65bfc4615b4831eb62889fe","gas":"0x7a120","value":"0x0","input":"0x","nonce":"0x2","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x2"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x"}
