// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 4 0x450e83a44669ca28fd2cd5b4af2665b5e6c4a8ae8c17786c31f930ce80a2d1a8 structLogger (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x450e83a44669ca28fd2cd5b4af2665b5e6c4a8ae8c17786c31f930ce80a2d1a8",{"enableMemory":false}]}
<< {"jsonrpc":"2.0","id":1,"result":{"gas":15000,"failed":false,"returnValue":"0x","structLogs":[]}}
