// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 1 0x1eda018e0358a229bd5c4952026d36642bbbaba04c6b4f4a72f440ef6ddcb4ac structLogger (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x1eda018e0358a229bd5c4952026d36642bbbaba04c6b4f4a72f440ef6ddcb4ac",{"enableMemory":false}]}
<< {"jsonrpc":"2.0","id":1,"result":{"gas":204600,"failed":false,"returnValue":"0x","structLogs":[]}}
