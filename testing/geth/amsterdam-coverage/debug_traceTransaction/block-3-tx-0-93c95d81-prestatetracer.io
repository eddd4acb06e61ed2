// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 0 0x93c95d8152dd3fb50b6cb826825cba0ef5e8957c3fe445cc762cbc896b154100 prestateTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x93c95d8152dd3fb50b6cb826825cba0ef5e8957c3fe445cc762cbc896b154100",{"tracer":"prestateTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"0x71562b71999873db5b286df957af199ec94617f7":{"balance":"0x16f763eac164000"},"0xd1305b6859348e50e827355a67c4a8d26216740d":{"balance":"0xd3c21bcecceda1000000"}}}
