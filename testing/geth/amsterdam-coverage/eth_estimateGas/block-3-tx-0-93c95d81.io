// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 0 0x93c95d8152dd3fb50b6cb826825cba0ef5e8957c3fe445cc762cbc896b154100 (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"from":"0xd1305b6859348e50e827355a67c4a8d26216740d","to":"0x7c8602b5861c1476ea1f438c062eaaf704a8462e","value":"0x5","input":"0x","nonce":"0x0","gasPrice":"0x2e90edd000"},"0x2"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x32a1f"}
