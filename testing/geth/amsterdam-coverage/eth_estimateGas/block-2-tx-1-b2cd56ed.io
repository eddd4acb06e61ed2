// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 1 0xb2cd56edbec5c91885875999e7d5f145f04372a43e59b959b5273acdaf2cba28 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"from":"0x3cad63d4b6f5800300f43759963c929b381e4604","value":"0x0","input":"0x6200001f600e5f396200001f5ff35f356020355b8015601d576001820182556001900390600101906005565b00","nonce":"0x1","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x1"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x3f367"}
