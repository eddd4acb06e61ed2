#![allow(missing_docs)]
use gigagas_netsim::{simulate, Config, Protocol};
fn main() {
    for (p, d) in [
        (Protocol::Gossipsub { idontwant: false }, 6),
        (Protocol::Gossipsub { idontwant: false }, 8),
        (Protocol::Gossipsub { idontwant: true }, 8),
        (Protocol::Rlnc { chunks: 10, per_peer: 1 }, 40),
        (Protocol::Rlnc { chunks: 10, per_peer: 1 }, 80),
    ] {
        let t = std::time::Instant::now();
        let r = simulate(Config {
            nodes: 10_000,
            degree: d,
            size_bytes: 121_600,
            latency_ms: 70.0,
            bandwidth: 20e6,
            upload_cap: None,
            verify_ms: 0.0,
            decode_ms: 0.0,
            protocol: p,
            seed: 1,
        });
        println!("{p:?} D={d}: hops {} (99%: {}), t50 {:.0} t99 {:.0} t100 {:.0} ms, bytes/node {:.0} ({:.2}xB), useful {} useless {} unused {} wasted {:.0}xB  [{:.1}s]",
            r.hops, r.hops_99, r.time_to_50_ms, r.time_to_99_ms, r.time_to_100_ms, r.bytes_per_node_mean, r.bytes_per_node_mean / 121_600.0, r.useful, r.useless, r.unused, r.wasted_bytes as f64 / 121_600.0, t.elapsed().as_secs_f64());
    }
}
