// geth 1.17.10's answer on amsterdam-coverage: block 2 tx 0 0xbfe0b1b5a4df0311bcc875b2eee3a710077d7660f17951c92e25821bc9a855bd prestateTracer (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"debug_traceTransaction","params":["0xbfe0b1b5a4df0311bcc875b2eee3a710077d7660f17951c92e25821bc9a855bd",{"tracer":"prestateTracer"}]}
<< {"jsonrpc":"2.0","id":1,"result":{"0x3cad63d4b6f5800300f43759963c929b381e4604":{"balance":"0xd3c21bcecceda1000000"}}}
