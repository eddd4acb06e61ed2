// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 0 0xbfe0b1b5a4df0311bcc875b2eee3a710077d7660f17951c92e25821bc9a855bd (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"from":"0x3cad63d4b6f5800300f43759963c929b381e4604","gas":"0x2dc6c0","value":"0x0","input":"0x62000007600e5f39620000075ff36020355f355500","nonce":"0x0","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x1"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x6020355f355500"}
