// geth 1.17.10's answer on amsterdam-coverage: block 11 tx 0 0x8df280013ae53d6f58ac6573b1e9f3858ef8ee595bafb7fc6d1c02c1a3d230a9 callTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x8df280013ae53d6f58ac6573b1e9f3858ef8ee595bafb7fc6d1c02c1a3d230a9",{"tracer":"callTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"from":"0xf432a4ff2f663cac2c31caab839e25ba65fa6d23","gas":"0x186a0","gasUsed":"0x3a98","to":"0x7c8602b5861c1476ea1f438c062eaaf704a8462e","input":"0x","value":"0x0","type":"CALL"}}
