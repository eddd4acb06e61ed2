// geth 1.17.10's answer on amsterdam-coverage: block 6 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceBlockByNumber","params":["0x6",{"tracer":"callTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":[]}
