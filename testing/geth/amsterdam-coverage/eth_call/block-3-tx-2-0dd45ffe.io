// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 2 0x0dd45ffeed43ec1c23c78474209d9f8553e1c064e759913f15465e7df9432bfd (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"from":"0x741de89325a90cb62d2bc63d808d5ccfd53877d0","to":"0x00d49b34a7031ecf318dca3f69b544e002964bd4","gas":"0x7a120","value":"0x1","input":"0x","nonce":"0x1","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x2"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x"}
