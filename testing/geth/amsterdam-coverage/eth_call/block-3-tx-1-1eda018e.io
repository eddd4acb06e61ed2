// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 1 0x1eda018e0358a229bd5c4952026d36642bbbaba04c6b4f4a72f440ef6ddcb4ac (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"from":"0x741de89325a90cb62d2bc63d808d5ccfd53877d0","to":"0x7c8602b5861c1476ea1f438c062eaaf704a8462e","gas":"0x7a120","value":"0x38d7ea4c68000","input":"0x","nonce":"0x0","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x2"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x"}
