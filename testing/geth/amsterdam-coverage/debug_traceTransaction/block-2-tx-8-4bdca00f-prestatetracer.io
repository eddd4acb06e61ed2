// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 8 0x4bdca00f8792ca0e399f6e5a46bb3aebb8efdab0dec420b7e69cc5bf0d75e213 prestateTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x4bdca00f8792ca0e399f6e5a46bb3aebb8efdab0dec420b7e69cc5bf0d75e213",{"tracer":"prestateTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"0x6499a061d10c3ed64d792b85c05a381c81670be7":{"balance":"0xd3c21bcecceda1000000"},"0x71562b71999873db5b286df957af199ec94617f7":{"balance":"0x6a2f2e6e7cc00"}}}
