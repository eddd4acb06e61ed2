// geth 1.17.10's answer on amsterdam-coverage: block 4 tx 0 0x17a3cb57e93f73622242da1555984a7087e355980eb95714f56691e06db31b95 callTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x17a3cb57e93f73622242da1555984a7087e355980eb95714f56691e06db31b95",{"tracer":"callTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"from":"0x4b8d62430e6dd1ebefbe71815c5e02925ecb5379","gas":"0xf4240","gasUsed":"0x4925c","to":"0x4b8d62430e6dd1ebefbe71815c5e02925ecb5379","input":"0x","value":"0x0","type":"CALL"}}
