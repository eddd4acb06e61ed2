// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 6 0x133d2274e1d645530177874434ea630a4ba53d8176c02c49079b936f4e48b5c8 prestateTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x133d2274e1d645530177874434ea630a4ba53d8176c02c49079b936f4e48b5c8",{"tracer":"prestateTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"0x3cad63d4b6f5800300f43759963c929b381e4604":{"balance":"0xd3c21bc5e4bc95959670","nonce":6},"0x71562b71999873db5b286df957af199ec94617f7":{"balance":"0x50b6ef0ee2400"}}}
