// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 1 0xb2cd56edbec5c91885875999e7d5f145f04372a43e59b959b5273acdaf2cba28 prestateTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0xb2cd56edbec5c91885875999e7d5f145f04372a43e59b959b5273acdaf2cba28",{"tracer":"prestateTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"0x3cad63d4b6f5800300f43759963c929b381e4604":{"balance":"0xd3c21bcd6dde6d31f540","nonce":1},"0x71562b71999873db5b286df957af199ec94617f7":{"balance":"0xc6d48105b000"}}}
