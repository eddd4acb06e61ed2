// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 3 0x14245cad1dcbd5721b8bc53aa2d9a84c0050cd0c887e0452d2c54f875ca2c758 structLogger (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x14245cad1dcbd5721b8bc53aa2d9a84c0050cd0c887e0452d2c54f875ca2c758",{"enableMemory":false}]}
<< {"jsonrpc":"2.0","id":1,"result":{"gas":12000,"failed":false,"returnValue":"0x","structLogs":[]}}
