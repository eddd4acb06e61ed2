// geth 1.17.10's answer on amsterdam-coverage: block 3 tx 13 0x7885271c4ffcee265b31e42b2ce785c27ff4ea168c182904ce9f7e910d822e0e (testing/rpc_vs_geth.py --record)
>> {"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"from":"0xece828cb45a68446b284f0f75bc4aee354be2158","to":"0xa543d3f0ba862d99fb47f0f7a7a57df1fa705877","gas":"0x1e8480","value":"0x0","input":"0x33ff","nonce":"0x1","accessList":[],"maxFeePerGas":"0x2e90edd000","maxPriorityFeePerGas":"0x3b9aca00"},"0x2"]}
<< {"jsonrpc":"2.0","id":1,"result":"0x"}
