// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 3 0x14245cad1dcbd5721b8bc53aa2d9a84c0050cd0c887e0452d2c54f875ca2c758 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"from":"0x741de89325a90cb62d2bc63d808d5ccfd53877d0","to":"0x741de89325a90cb62d2bc63d808d5ccfd53877d0","gas":"0x7a120","value":"0x3039","input":"0x","nonce":"0x2","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x2"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x"}
