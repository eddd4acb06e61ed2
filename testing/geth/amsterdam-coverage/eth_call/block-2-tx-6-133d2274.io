// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 6 0x133d2274e1d645530177874434ea630a4ba53d8176c02c49079b936f4e48b5c8 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"from":"0x3cad63d4b6f5800300f43759963c929b381e4604","gas":"0x2dc6c0","value":"0x1a13b8600","input":"0x62000002600e5f39620000025ff330ff","nonce":"0x6","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x1"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x30ff"}
