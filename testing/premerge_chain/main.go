// Command premerge_chain writes a proof-of-work chain with ommers (uncles) that geth 1.17.10
// and gigagas both import: genesis.json and chain.rlp in the folder it is given. London rules
// from genesis, the Merge's total difficulty never reached; ethash seals are not checked by geth since the Merge (its engine
// accepts any seal), so the blocks carry none. Blocks:
//
//	1  transfers from the funded key to fresh accounts
//	2  empty
//	3  one ommer (a sibling of block 2, its own fee recipient)
//	4  transfers and a contract creation
//	5  two ommers (siblings of blocks 3 and 4, each with its own fee recipient)
//	6  transfers
//	7  empty
//	8  one ommer (a sibling of block 2: six generations back, the oldest allowed)
//
// Every block has its own fee recipient, so that the block, ommer and nephew rewards show in
// the balances each pays.
//
// Usage: go run . OUT_DIR
package main

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"
)

// The first Hardhat/Anvil development key (testing/dev-genesis.json funds it too).
const key = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: premerge_chain OUT_DIR")
		os.Exit(2)
	}
	out := os.Args[1]
	if err := os.MkdirAll(out, 0o755); err != nil {
		fail(err)
	}
	priv, err := crypto.HexToECDSA(key)
	if err != nil {
		fail(err)
	}
	sender := crypto.PubkeyToAddress(priv.PublicKey)
	config := &params.ChainConfig{
		ChainID:             big.NewInt(1337),
		HomesteadBlock:      big.NewInt(0),
		EIP150Block:         big.NewInt(0),
		EIP155Block:         big.NewInt(0),
		EIP158Block:         big.NewInt(0),
		ByzantiumBlock:      big.NewInt(0),
		ConstantinopleBlock: big.NewInt(0),
		PetersburgBlock:     big.NewInt(0),
		IstanbulBlock:       big.NewInt(0),
		MuirGlacierBlock:    big.NewInt(0),
		BerlinBlock:         big.NewInt(0),
		LondonBlock:         big.NewInt(0),
		ArrowGlacierBlock:   big.NewInt(0),
		GrayGlacierBlock:    big.NewInt(0),
		Ethash:              new(params.EthashConfig),
		// geth runs only networks with a Merge: one far above this chain's total difficulty
		// and height (gigagas schedules the Merge by its block).
		TerminalTotalDifficulty: new(big.Int).Lsh(common.Big1, 60),
		MergeNetsplitBlock:      big.NewInt(1_000_000),
	}
	genesis := &core.Genesis{
		Config:     config,
		Difficulty: big.NewInt(131072),
		GasLimit:   30_000_000,
		BaseFee:    big.NewInt(params.InitialBaseFee),
		Alloc: types.GenesisAlloc{
			sender: {Balance: new(big.Int).Mul(big.NewInt(1000), big.NewInt(params.Ether))},
		},
	}
	signer := types.LatestSigner(config)
	nonce := uint64(0)
	send := func(b *core.BlockGen, to *common.Address, value int64, data []byte, gas uint64) {
		tx := types.MustSignNewTx(priv, signer, &types.DynamicFeeTx{
			ChainID:   config.ChainID,
			Nonce:     nonce,
			GasTipCap: big.NewInt(2 * params.GWei),
			GasFeeCap: big.NewInt(50 * params.GWei),
			Gas:       gas,
			To:        to,
			Value:     big.NewInt(value),
			Data:      data,
		})
		nonce++
		b.AddTx(tx)
	}
	ommer := func(b *core.BlockGen, parent *types.Block, tag byte) {
		b.AddUncle(&types.Header{
			ParentHash:  parent.Hash(),
			UncleHash:   types.EmptyUncleHash,
			Coinbase:    common.Address{0x0a, tag},
			Root:        parent.Root(),
			TxHash:      types.EmptyTxsHash,
			ReceiptHash: types.EmptyReceiptsHash,
			Number:      new(big.Int).Add(parent.Number(), common.Big1),
			Extra:       []byte{'o', 'm', 'm', 'e', 'r', tag},
		})
	}
	_, blocks, _ := core.GenerateChainWithGenesis(genesis, ethash.NewFaker(), 8, func(i int, b *core.BlockGen) {
		b.SetCoinbase(common.Address{0xc0, byte(i + 1)})
		switch i + 1 {
		case 1, 6:
			for j := 0; j < 3; j++ {
				to := common.Address{0xee, byte(i + 1), byte(j)}
				send(b, &to, int64(1000+j), nil, 21_000)
			}
		case 3:
			ommer(b, b.PrevBlock(0), 1)
		case 4:
			to := common.Address{0xee, 4}
			send(b, &to, 7, nil, 21_000)
			// Init code returning a one-byte contract (STOP).
			send(b, nil, 0, common.FromHex("0x6001600c60003960016000f300"), 100_000)
		case 5:
			ommer(b, b.PrevBlock(1), 2)
			ommer(b, b.PrevBlock(2), 3)
		case 8:
			ommer(b, b.PrevBlock(0), 4)
		}
	})
	f, err := os.Create(filepath.Join(out, "chain.rlp"))
	if err != nil {
		fail(err)
	}
	for _, block := range blocks {
		if err := rlp.Encode(f, block); err != nil {
			fail(err)
		}
	}
	if err := f.Close(); err != nil {
		fail(err)
	}
	encoded, err := json.MarshalIndent(genesis, "", "  ")
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(filepath.Join(out, "genesis.json"), encoded, 0o644); err != nil {
		fail(err)
	}
	fmt.Printf("premerge_chain: %d blocks, head %s, in %s\n", len(blocks), blocks[len(blocks)-1].Hash(), out)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "premerge_chain:", err)
	os.Exit(1)
}
