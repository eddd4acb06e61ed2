// geth 1.17.10's answer on amsterdam-coverage: block 4 tx 0 0x17a3cb57e93f73622242da1555984a7087e355980eb95714f56691e06db31b95 structLogger (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x17a3cb57e93f73622242da1555984a7087e355980eb95714f56691e06db31b95",{"enableMemory":false}]}
<< {"jsonrpc":"2.0","id":1,"result":{"gas":299612,"failed":false,"returnValue":"0x","structLogs":[]}}
