//! RLNC costs (criterion): the proposal's case (118.75 KB in N = 10 chunks) and 1 MiB in N = 32.
//! Proposer (chunking, N commitments, BLS signature), verify one chunk, verify a batch of N
//! chunks, recode, decode (N chunks into the decoder, then the bytes) — and, side by side, the
//! GF(2^8) `rlnc` crate without authentication as the CPU lower bound.

#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gigagas_rlnc::{recode, Chunks, CodedChunk, Decoder, Generators, Proposer};
use rand::{rngs::StdRng, RngCore, SeedableRng};

const CASES: [(&str, usize, usize); 2] = [("118.75KB_N10", 121_600, 10), ("1MiB_N32", 1 << 20, 32)];

fn block(len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    StdRng::seed_from_u64(len as u64).fill_bytes(&mut b);
    b
}

fn ristretto(c: &mut Criterion) {
    let mut group = c.benchmark_group("rlnc_ristretto");
    group.sample_size(10);
    let key = blst::min_pk::SecretKey::key_gen(&[7; 32], &[]).expect("32-byte ikm");
    for (name, len, n) in CASES {
        let data = block(len);
        let chunks = Chunks::from_block(&data, n).expect("n > 0");
        let mut rng = StdRng::seed_from_u64(1);
        let coded: Vec<CodedChunk> = (0..n).map(|_| chunks.random_combination(&mut rng)).collect();
        // One thread (one table, a one-thread pool), then every core: the proposer's N
        // commitments and one chunk's multiscalar multiplication split over the pool.
        for threads in thread_counts() {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
            let g = Generators::with_parts(chunks.m(), threads);
            let commitments = pool.install(|| g.commit_all(&chunks));
            let id = |op: &str| BenchmarkId::new(format!("{op}_{threads}t"), name);
            group.bench_function(id("proposer"), |b| {
                b.iter(|| pool.install(|| Proposer::new(&data, n, &g, &key).expect("valid")))
            });
            group.bench_function(id("verify_one"), |b| {
                b.iter(|| pool.install(|| assert!(g.verify(&coded[0], &commitments))))
            });
            group.bench_function(id("verify_batch_of_n"), |b| {
                b.iter(|| {
                    pool.install(|| {
                        assert!(g.verify_batch(&coded, &commitments, &mut rng).is_empty())
                    })
                })
            });
        }
        group.bench_function(BenchmarkId::new("recode", name), |b| {
            b.iter(|| recode(&coded, &mut rng).expect("non-empty"))
        });
        group.bench_function(BenchmarkId::new("decode", name), |b| {
            b.iter(|| {
                let mut d = Decoder::new(n, chunks.m());
                for c in &coded {
                    d.add(c.clone()).expect("shape");
                }
                d.decode().expect("block").expect("complete")
            })
        });
    }
    group.finish();
}

/// 1 and the machine's cores (if more than one).
fn thread_counts() -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores > 1 {
        vec![1, cores]
    } else {
        vec![1]
    }
}

fn gf256(c: &mut Criterion) {
    let mut group = c.benchmark_group("rlnc_gf256");
    group.sample_size(10);
    for (name, len, n) in CASES {
        let data = block(len);
        let mut rng = <rand09::rngs::StdRng as rand09::SeedableRng>::seed_from_u64(1);
        let encoder = rlnc::full::Encoder::new(data.clone(), n).expect("valid");
        group.bench_function(BenchmarkId::new("encode_one", name), |b| {
            b.iter(|| encoder.code(&mut rng))
        });
        let pieces: Vec<Vec<u8>> = (0..n + 2).map(|_| encoder.code(&mut rng)).collect();
        let piece_len = pieces[0].len();
        let flat: Vec<u8> = pieces.iter().flatten().copied().collect();
        group.bench_function(BenchmarkId::new("recode", name), |b| {
            b.iter(|| {
                let mut r = rlnc::full::Recoder::new(flat.clone(), piece_len, n).expect("valid");
                r.recode(&mut rng)
            })
        });
        group.bench_function(BenchmarkId::new("decode", name), |b| {
            b.iter(|| {
                let mut d =
                    rlnc::full::Decoder::new(encoder.get_piece_byte_len(), n).expect("valid");
                for p in &pieces {
                    if d.is_already_decoded() {
                        break;
                    }
                    let _ = d.decode(p);
                }
                d.get_decoded_data().expect("decoded")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, ristretto, gf256);
criterion_main!(benches);
