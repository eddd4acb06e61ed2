// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 4 0x604fd6d22e139c406ee96c9ec1e8c4fd4254b7bf8e3cce9425a082fa28bba73b prestateTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x604fd6d22e139c406ee96c9ec1e8c4fd4254b7bf8e3cce9425a082fa28bba73b",{"tracer":"prestateTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"0x3cad63d4b6f5800300f43759963c929b381e4604":{"balance":"0xd3c21bc89de9fdb558b0","nonce":4},"0x71562b71999873db5b286df957af199ec94617f7":{"balance":"0x380930d311400"}}}
