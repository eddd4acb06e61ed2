// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 1 0x1eda018e0358a229bd5c4952026d36642bbbaba04c6b4f4a72f440ef6ddcb4ac prestateTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x1eda018e0358a229bd5c4952026d36642bbbaba04c6b4f4a72f440ef6ddcb4ac",{"tracer":"prestateTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"0x71562b71999873db5b286df957af199ec94617f7":{"balance":"0x1b641489f263780"},"0x741de89325a90cb62d2bc63d808d5ccfd53877d0":{"balance":"0xd3c21bcecceda1000000"}}}
