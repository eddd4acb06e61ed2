// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 5 0x0541011fb0f5e70f8e5c4e5e0c895960fbe0e63222c15219d465540b35c01ffb prestateTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0x0541011fb0f5e70f8e5c4e5e0c895960fbe0e63222c15219d465540b35c01ffb",{"tracer":"prestateTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"0x3cad63d4b6f5800300f43759963c929b381e4604":{"balance":"0xd3c21bc7376825548240","nonce":5},"0x71562b71999873db5b286df957af199ec94617f7":{"balance":"0x44b9f6c8e7000"}}}
