// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 12 0x1f1a4f9e8ab2b360867c14b844f125bebb544196957b48427a2ceb8eb9e26ad7 prestateTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x1f1a4f9e8ab2b360867c14b844f125bebb544196957b48427a2ceb8eb9e26ad7",{"tracer":"prestateTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"0x71562b71999873db5b286df957af199ec94617f7":{"balance":"0x1bafbfc59c93980"},"0xece828cb45a68446b284f0f75bc4aee354be2158":{"balance":"0xd3c21bcecceda1000000"}}}
