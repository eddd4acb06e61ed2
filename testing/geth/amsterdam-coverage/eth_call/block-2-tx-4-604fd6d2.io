// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 4 0x604fd6d22e139c406ee96c9ec1e8c4fd4254b7bf8e3cce9425a082fa28bba73b (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"from":"0x3cad63d4b6f5800300f43759963c929b381e4604","gas":"0x2dc6c0","value":"0x0","input":"0x6200000a600e5f396200000a5ff35f5f5f5f345f355af100","nonce":"0x4","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x1"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x5f5f5f5f345f355af100"}
