// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 3 0xf885ca0f7968fb5d04f1ea1a85f26386bd8637c36dd1d406ad809b9945906630 prestateTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0xf885ca0f7968fb5d04f1ea1a85f26386bd8637c36dd1d406ad809b9945906630",{"tracer":"prestateTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"0x3cad63d4b6f5800300f43759963c929b381e4604":{"balance":"0xd3c21bca742a0e84e8f0","nonce":3},"0x71562b71999873db5b286df957af199ec94617f7":{"balance":"0x2763ced040400"}}}
