// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 0 0x93c95d8152dd3fb50b6cb826825cba0ef5e8957c3fe445cc762cbc896b154100 callTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x93c95d8152dd3fb50b6cb826825cba0ef5e8957c3fe445cc762cbc896b154100",{"tracer":"callTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"from":"0xd1305b6859348e50e827355a67c4a8d26216740d","gas":"0x186a0","gasUsed":"0x186a0","to":"0x7c8602b5861c1476ea1f438c062eaaf704a8462e","input":"0x","error":"out of gas","value":"0x5","type":"CALL"}}
