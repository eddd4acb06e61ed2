//! `gigagas proofs-check`: the state-root stage checked on real mainnet blocks without a full
//! state. For each block of `../shared/data/mainnet-proofs`: the parent's `eth_getProof`
//! answers are verified against the parent's `stateRoot` and become the pre-state; the block is
//! executed (sequential reference, header's `gasUsed`, `logsBloom` and, from Byzantium, the
//! `receiptsRoot` checked); its post-state diff is applied to a sparse trie built from the proof
//! nodes (the block's own proofs supply the siblings that deletions collapse into); the root
//! must equal the block's `stateRoot`.

use alloy_consensus::constants::KECCAK_EMPTY;
use alloy_primitives::{keccak256, map::HashMap, Address, B256, U256};
use clap::Args;
use gigagas_executor::{sequential::execute_sequential, validate_header};
use gigagas_primitives::ChainSpec;
use gigagas_state::{
    proofs::{load_proof_block, ProofBlock, ProvenAccount},
    PreState,
};
use gigagas_trie::{update_state_root, AccountUpdate, ProofNodes, Trie};
use serde::Serialize;
use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
    time::Instant,
};

/// Arguments of `gigagas proofs-check`.
#[derive(Debug, Args)]
pub(crate) struct ProofsCheckArgs {
    /// `block-<number>.json.gz` files of the mainnet-proofs data set, or folders of them.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print one JSON array (one object per block) instead of the table.
    #[arg(long)]
    json: bool,
}

/// One block's result.
#[derive(Debug, Serialize)]
struct BlockCheck {
    file: String,
    number: Option<u64>,
    /// Our state root (hex), when computed.
    root: Option<B256>,
    /// The header's `stateRoot`.
    header_root: Option<B256>,
    /// Whether they are equal.
    matches: bool,
    transactions: usize,
    accounts_updated: usize,
    slots_updated: usize,
    /// Time of the state-root computation alone (ms).
    state_root_ms: f64,
    /// What failed, when something did (the block, account and slot named).
    error: Option<String>,
}

fn files(args: &ProofsCheckArgs) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for path in &args.files {
        if path.is_dir() {
            let entries =
                std::fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".json.gz"))
                })
                .collect();
            found.sort_by_key(|p| block_number_of(p).unwrap_or(u64::MAX));
            out.extend(found);
        } else if path.is_file() {
            out.push(path.clone());
        } else {
            return Err(format!(
                "{} not found (the proofs data set lives in ../shared/data/mainnet-proofs)",
                path.display()
            ));
        }
    }
    Ok(out)
}

fn block_number_of(path: &Path) -> Option<u64> {
    path.file_name()?.to_str()?.strip_prefix("block-")?.strip_suffix(".json.gz")?.parse().ok()
}

/// Runs the check; exit code 0 when every block's root matches, 1 otherwise.
pub(crate) fn run(args: ProofsCheckArgs) -> Result<ExitCode, String> {
    let chain = ChainSpec::mainnet();
    let mut results = Vec::new();
    for file in files(&args)? {
        let mut r = BlockCheck {
            file: file.display().to_string(),
            number: None,
            root: None,
            header_root: None,
            matches: false,
            transactions: 0,
            accounts_updated: 0,
            slots_updated: 0,
            state_root_ms: 0.0,
            error: None,
        };
        if let Err(e) = check(&chain, &file, &mut r) {
            r.error = Some(e);
        }
        if !args.json {
            print_line(&r);
        }
        results.push(r);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results).map_err(|e| e.to_string())?);
    } else {
        let ok = results.iter().filter(|r| r.matches).count();
        println!("{ok} of {} blocks: state root matches the header", results.len());
    }
    Ok(if results.iter().all(|r| r.matches) { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn print_line(r: &BlockCheck) {
    let hex = |h: Option<B256>| h.map_or_else(|| "-".to_string(), |h| h.to_string());
    let number = r.number.map_or_else(|| "?".to_string(), |n| n.to_string());
    let verdict = if r.matches { "match" } else { "MISMATCH" };
    println!(
        "{number:>9}  ours {}  header {}  {verdict}  ({} txs, {} accounts, {} slots, root {:.2} ms)",
        hex(r.root),
        hex(r.header_root),
        r.transactions,
        r.accounts_updated,
        r.slots_updated,
        r.state_root_ms
    );
    if let Some(e) = &r.error {
        println!("           error: {e}");
    }
}

fn check(chain: &ChainSpec, file: &Path, r: &mut BlockCheck) -> Result<(), String> {
    let data = load_proof_block(file).map_err(|e| e.to_string())?;
    let number = data.block.number();
    r.number = Some(number);
    r.header_root = Some(data.block.header.state_root);
    r.transactions = data.block.transactions.len();
    let mut nodes = ProofNodes::default();
    nodes.extend(data.pre_nodes.iter().cloned());
    let pre_state = verified_pre_state(&data, &nodes)
        .map_err(|e| format!("block {number}: proofs at the parent: {e}"))?;
    nodes.extend(data.post_nodes.iter().cloned());
    nodes.extend_collapse_candidates(&data.post_nodes);

    let senders = data.block.par_recover(chain).map_err(|e| e.to_string())?;
    let outcome =
        execute_sequential(chain, &data.block, &senders, &pre_state).map_err(|e| e.to_string())?;
    let bal = outcome.bal.clone().unwrap_or_default();
    validate_header(chain, &data.block, &outcome, &bal).map_err(|e| e.to_string())?;

    let updates = gigagas_validation::account_updates(&outcome);
    r.accounts_updated = updates.len();
    r.slots_updated = updates.iter().map(|u| u.storage.len()).sum();
    let start = Instant::now();
    let result = update_state_root(data.parent.header.state_root, &updates, &nodes)
        .map_err(|e| format!("block {number}: state root: {e}"))?;
    r.state_root_ms = start.elapsed().as_secs_f64() * 1e3;
    r.root = Some(result.root);
    r.matches = result.root == data.block.header.state_root;
    if !r.matches {
        r.error = first_post_difference(&data, &updates, &pre_state, &result.storage_roots);
    }
    Ok(())
}

/// Verifies every proven account and slot against the parent's state root and builds the
/// pre-state from them (an account whose proof shows absence is left out).
fn verified_pre_state(data: &ProofBlock, nodes: &ProofNodes) -> Result<PreState, String> {
    let parent = &data.parent;
    // BLOCKHASH: every ancestor the file carries.
    let hashes = data.block_hashes.clone();
    let mut state = PreState::new(Arc::new(data.contracts.clone()), Arc::new(hashes));
    let mut accounts = Trie::new(parent.header.state_root);
    for a in &data.pre_accounts {
        if !verify_account(&mut accounts, a, nodes)? {
            continue;
        }
        let storage = a.storage.iter().filter(|(_, v)| !v.is_zero()).copied().collect();
        state
            .insert_account(a.address, a.balance, a.nonce, a.code_hash, storage)
            .map_err(|e| format!("account {}: {e}", a.address))?;
        // The proofs hold the slots the block touches; the storage root says whether there are
        // others (EIP-7610's collision test).
        state.set_has_storage(&a.address, a.storage_hash != alloy_trie::EMPTY_ROOT_HASH);
    }
    Ok(state)
}

/// Checks `a` against the account trie (and its slots against its storage trie); returns
/// whether the account exists.
fn verify_account(
    accounts: &mut Trie,
    a: &ProvenAccount,
    nodes: &ProofNodes,
) -> Result<bool, String> {
    let leaf = accounts
        .get(&alloy_trie::Nibbles::unpack(keccak256(a.address)), nodes)
        .map_err(|e| format!("account {}: {e}", a.address))?;
    let Some(leaf) = leaf else {
        let empty =
            a.nonce == 0 && a.balance.is_zero() && a.storage.iter().all(|(_, v)| v.is_zero());
        return if empty {
            Ok(false)
        } else {
            Err(format!("account {}: proven absent but answered with values", a.address))
        };
    };
    let found: alloy_trie::TrieAccount = alloy_rlp::decode_exact(&leaf)
        .map_err(|e| format!("account {}: leaf does not decode: {e}", a.address))?;
    let claimed = alloy_trie::TrieAccount::new(a.nonce, a.balance, a.storage_hash, a.code_hash);
    if found != claimed {
        return Err(format!(
            "account {}: proof holds {found:?}, answer says {claimed:?}",
            a.address
        ));
    }
    let mut storage = Trie::new(a.storage_hash);
    for (slot, value) in &a.storage {
        let key = alloy_trie::Nibbles::unpack(keccak256(B256::from(*slot)));
        let got = storage
            .get(&key, nodes)
            .map_err(|e| format!("account {} slot {slot:#x}: {e}", a.address))?;
        let got = got
            .map(|v| alloy_rlp::decode_exact::<U256>(&v))
            .transpose()
            .map_err(|e| format!("account {} slot {slot:#x}: {e}", a.address))?
            .unwrap_or_default();
        if got != *value {
            return Err(format!(
                "account {} slot {slot:#x}: proof holds {got:#x}, answer says {value:#x}",
                a.address
            ));
        }
    }
    Ok(true)
}

/// On a root mismatch: the first account whose values after our execution differ from the
/// block's own proofs.
fn first_post_difference(
    data: &ProofBlock,
    updates: &[AccountUpdate],
    pre: &PreState,
    storage_roots: &[(Address, B256)],
) -> Option<String> {
    let ours: HashMap<Address, &AccountUpdate> = updates.iter().map(|u| (u.address, u)).collect();
    let roots: HashMap<Address, B256> = storage_roots.iter().copied().collect();
    for a in &data.post_accounts {
        let (nonce, balance, code_hash) = match ours.get(&a.address) {
            Some(u) => u.info.unwrap_or((0, U256::ZERO, KECCAK_EMPTY)),
            None => pre.account(&a.address).map(|i| (i.nonce, i.balance, i.code_hash)).unwrap_or((
                0,
                U256::ZERO,
                KECCAK_EMPTY,
            )),
        };
        if (nonce, balance, code_hash) != (a.nonce, a.balance, a.code_hash) {
            return Some(format!(
                "account {}: ours nonce {nonce} balance {balance} code {code_hash}, block's proof \
                 nonce {} balance {} code {}",
                a.address, a.nonce, a.balance, a.code_hash
            ));
        }
        if let Some(root) = roots.get(&a.address) {
            if *root != a.storage_hash {
                return Some(format!(
                    "account {}: storage root ours {root}, block's proof {}",
                    a.address, a.storage_hash
                ));
            }
        }
    }
    Some(
        "every proven account agrees; the difference is in an account the proofs do not cover"
            .into(),
    )
}
