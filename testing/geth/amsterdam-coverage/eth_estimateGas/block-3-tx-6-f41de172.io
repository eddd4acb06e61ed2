// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 6 0xf41de1727bc4f57c48b59cc844df9ca20e73ba40aa1b6a5168075f5b9294e8d3 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"from":"0x00d49b34a7031ecf318dca3f69b544e002964bd4","to":"0x6566d4c947f0a0300e4c048718236527e5c0840a","value":"0x0","input":"0x","nonce":"0x1","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x2"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x1ec9d"}
