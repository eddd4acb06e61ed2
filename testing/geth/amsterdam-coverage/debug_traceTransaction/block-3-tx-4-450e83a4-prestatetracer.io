// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 4 0x450e83a44669ca28fd2cd5b4af2665b5e6c4a8ae8c17786c31f930ce80a2d1a8 prestateTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x450e83a44669ca28fd2cd5b4af2665b5e6c4a8ae8c17786c31f930ce80a2d1a8",{"tracer":"prestateTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"0x71562b71999873db5b286df957af199ec94617f7":{"balance":"0x1b719612ebf7780"},"0x741de89325a90cb62d2bc63d808d5ccfd53877d0":{"balance":"0xd3c21bc9c87d5da5c97f","nonce":3}}}
