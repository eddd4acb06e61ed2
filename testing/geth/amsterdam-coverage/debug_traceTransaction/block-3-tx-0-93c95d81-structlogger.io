// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 0 0x93c95d8152dd3fb50b6cb826825cba0ef5e8957c3fe445cc762cbc896b154100 structLogger (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x93c95d8152dd3fb50b6cb826825cba0ef5e8957c3fe445cc762cbc896b154100",{"enableMemory":false}]}
<< {"jsonrpc":"2.0","id":1,"result":{"gas":100000,"failed":true,"returnValue":"0x","structLogs":[]}}
