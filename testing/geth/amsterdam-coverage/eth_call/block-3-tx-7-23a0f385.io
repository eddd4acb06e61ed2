// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 7 0x23a0f385acdab4f312eae27b2028889b12487b0266b3208540bb5d07655c627a (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"from":"0x00d49b34a7031ecf318dca3f69b544e002964bd4","to":"0x737004d67df6e3133fed6bc71e79a7b9f3326346","gas":"0x7a120","value":"0x0","input":"0x","nonce":"0x2","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x2"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x"}
