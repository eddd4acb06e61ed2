// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 3 0xf885ca0f7968fb5d04f1ea1a85f26386bd8637c36dd1d406ad809b9945906630 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"from":"0x3cad63d4b6f5800300f43759963c929b381e4604","value":"0x0","input":"0x62000037600e5f39620000375ff3600160026003600460056006600760086009600a600b600c600d600e600f60106011601260136014e680e780e88e5f5560015560025500","nonce":"0x3","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x1"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x4858b"}
