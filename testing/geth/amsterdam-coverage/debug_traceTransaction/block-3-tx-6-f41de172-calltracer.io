// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 6 0xf41de1727bc4f57c48b59cc844df9ca20e73ba40aa1b6a5168075f5b9294e8d3 callTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0xf41de1727bc4f57c48b59cc844df9ca20e73ba40aa1b6a5168075f5b9294e8d3",{"tracer":"callTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"from":"0x00d49b34a7031ecf318dca3f69b544e002964bd4","gas":"0x7a120","gasUsed":"0x1e866","to":"0x6566d4c947f0a0300e4c048718236527e5c0840a","input":"0x","value":"0x0","type":"CALL"}}
