// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 12 0x1f1a4f9e8ab2b360867c14b844f125bebb544196957b48427a2ceb8eb9e26ad7 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"from":"0xece828cb45a68446b284f0f75bc4aee354be2158","value":"0xb2d05e00","input":"0x73551e021077e74c41723dec9cccd3b92443f82f87ff","nonce":"0x0","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x2"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x64d27"}
