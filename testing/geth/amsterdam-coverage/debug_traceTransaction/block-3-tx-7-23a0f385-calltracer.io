// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 7 0x23a0f385acdab4f312eae27b2028889b12487b0266b3208540bb5d07655c627a callTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x23a0f385acdab4f312eae27b2028889b12487b0266b3208540bb5d07655c627a",{"tracer":"callTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"from":"0x00d49b34a7031ecf318dca3f69b544e002964bd4","gas":"0x7a120","gasUsed":"0x54431","to":"0x737004d67df6e3133fed6bc71e79a7b9f3326346","input":"0x","value":"0x0","type":"CALL"}}
