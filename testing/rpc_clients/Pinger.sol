// Pinger: the contract of testing/rpc_clients' flows. Its ABI, creation code and runtime code are
// in pinger.json beside this file, compiled once (no compiler at test time) by solc-js 0.8.37
// (npm `solc@0.8.37`, 0.8.37+commit.f401782d.Emscripten.clang) with the optimizer on (200 runs),
// evmVersion cancun and no metadata (`metadata: {bytecodeHash: "none", appendCBOR: false}`),
// so that its code is the same on every node and the flows can compare answers literally.
// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

contract Pinger {
    uint256 public counter;

    event Ping(address indexed from, uint256 value);

    function ping(uint256 value) external returns (uint256) {
        counter += value;
        emit Ping(msg.sender, value);
        return counter;
    }

    function balanceOf(address who) external view returns (uint256) {
        return who.balance;
    }

    function fail() external pure {
        revert("Pinger: fail");
    }
}
