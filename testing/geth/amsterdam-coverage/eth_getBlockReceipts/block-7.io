// geth 1.17.10's answer on amsterdam-coverage: block 7 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_getBlockReceipts","params":["0x7"]}
<< {"jsonrpc":"2.0","id":1,"result":[]}
