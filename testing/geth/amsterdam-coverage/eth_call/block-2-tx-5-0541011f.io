// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 5 0x0541011fb0f5e70f8e5c4e5e0c895960fbe0e63222c15219d465540b35c01ffb (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"from":"0x3cad63d4b6f5800300f43759963c929b381e4604","gas":"0x2dc6c0","value":"0x12a05f200","input":"0x62000002600e5f39620000025ff333ff","nonce":"0x5","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x1"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x33ff"}
