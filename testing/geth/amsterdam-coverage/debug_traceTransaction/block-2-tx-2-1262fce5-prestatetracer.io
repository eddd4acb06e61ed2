// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 2 0x1262fce58d6ec056a9defb429182d80f3a44529ac34ba7a4fb0f5cf0fdedcfb0 prestateTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x1262fce58d6ec056a9defb429182d80f3a44529ac34ba7a4fb0f5cf0fdedcfb0",{"tracer":"prestateTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"0x3cad63d4b6f5800300f43759963c929b381e4604":{"balance":"0xd3c21bcbd3394252f3b0","nonce":2},"0x71562b71999873db5b286df957af199ec94617f7":{"balance":"0x1af686bfe5400"}}}
