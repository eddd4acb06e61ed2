// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 15 0x3c646b9ac0a03634a707bef36e2fbf2b72dba2be3b77e776cd821c9fead69379 structLogger (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x3c646b9ac0a03634a707bef36e2fbf2b72dba2be3b77e776cd821c9fead69379",{"enableMemory":false}]}
<< {"jsonrpc":"2.0","id":1,"result":{"gas":6415000,"failed":false,"returnValue":"0x","structLogs":[]}}
