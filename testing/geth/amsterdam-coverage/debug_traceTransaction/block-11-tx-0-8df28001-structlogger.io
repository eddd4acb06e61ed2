// geth 1.17.10's answer on amsterdam-coverage: block 11 tx 0 0x8df280013ae53d6f58ac6573b1e9f3858ef8ee595bafb7fc6d1c02c1a3d230a9 structLogger (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x8df280013ae53d6f58ac6573b1e9f3858ef8ee595bafb7fc6d1c02c1a3d230a9",{"enableMemory":false}]}
<< {"jsonrpc":"2.0","id":1,"result":{"gas":15000,"failed":false,"returnValue":"0x","structLogs":[]}}
