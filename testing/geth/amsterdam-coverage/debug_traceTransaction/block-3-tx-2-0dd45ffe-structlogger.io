// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 2 0x0dd45ffeed43ec1c23c78474209d9f8553e1c064e759913f15465e7df9432bfd structLogger (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x0dd45ffeed43ec1c23c78474209d9f8553e1c064e759913f15465e7df9432bfd",{"enableMemory":false}]}
<< {"jsonrpc":"2.0","id":1,"result":{"gas":21000,"failed":false,"returnValue":"0x","structLogs":[]}}
