// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 4 0x450e83a44669ca28fd2cd5b4af2665b5e6c4a8ae8c17786c31f930ce80a2d1a8 callTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x450e83a44669ca28fd2cd5b4af2665b5e6c4a8ae8c17786c31f930ce80a2d1a8",{"tracer":"callTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"from":"0x741de89325a90cb62d2bc63d808d5ccfd53877d0","gas":"0x7a120","gasUsed":"0x3a98","to":"0xcaec8fd234c4e1b77404d5af1c835d99024488bd","input":"0x","value":"0x0","type":"CALL"}}
