// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 7 0x3bda00a53933f407ac1797acfcbf1798a5decca69ea23f285e9cc3205264f582 prestateTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x3bda00a53933f407ac1797acfcbf1798a5decca69ea23f285e9cc3205264f582",{"tracer":"prestateTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"0x3cad63d4b6f5800300f43759963c929b381e4604":{"balance":"0xd3c21bc492108ea116a0","nonce":7},"0x71562b71999873db5b286df957af199ec94617f7":{"balance":"0x5cb3e754dd800"}}}
