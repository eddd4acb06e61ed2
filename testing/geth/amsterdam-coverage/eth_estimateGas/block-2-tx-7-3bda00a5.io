// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 7 0x3bda00a53933f407ac1797acfcbf1798a5decca69ea23f285e9cc3205264f582 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"from":"0x3cad63d4b6f5800300f43759963c929b381e4604","value":"0x0","input":"0x62000013600e5f39620000135ff3365f5f37365f5ff05f555f365f5ff560015500","nonce":"0x7","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x1"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x3aa5c"}
