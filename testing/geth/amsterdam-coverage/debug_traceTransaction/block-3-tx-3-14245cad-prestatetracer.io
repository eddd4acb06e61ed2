// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 3 0x14245cad1dcbd5721b8bc53aa2d9a84c0050cd0c887e0452d2c54f875ca2c758 prestateTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x14245cad1dcbd5721b8bc53aa2d9a84c0050cd0c887e0452d2c54f875ca2c758",{"tracer":"prestateTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"0x71562b71999873db5b286df957af199ec94617f7":{"balance":"0x1b70e773702b780"},"0x741de89325a90cb62d2bc63d808d5ccfd53877d0":{"balance":"0xd3c21bc9db6d1fd69eff","nonce":2}}}
