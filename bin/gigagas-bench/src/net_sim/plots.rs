//! PNG charts of `gigagas net-sim --plots DIR` (plotters, bitmap backend, text in DejaVu Sans).

use super::{config, run_all, sweep_configs, NetSimArgs};
use crate::chart::{legend, plot_err, register_font, Chart};
use gigagas_netsim::{Config, Protocol, Report};
use plotters::prelude::*;
use std::{path::Path, process::ExitCode};

/// The uplink-capped panel's network and CPU: 25 Mbit/s per node, and the costs measured by
/// `cargo bench -p gigagas-rlnc` (2.2 ms to verify a chunk, 1.0 ms to decode; docs/rlnc.md).
const CAP_MBIT: f64 = 25.0;
const CAP_VERIFY_MS: f64 = 2.2;
const CAP_DECODE_MS: f64 = 1.0;

const fn rlnc(chunks: usize, per_peer: usize) -> Protocol {
    Protocol::Rlnc { chunks, per_peer, decoded_notice: false }
}

/// The CDF chart's cases: (label, protocol, D).
const CDF_CASES: [(&str, Protocol, usize); 6] = [
    ("gossipsub D=6", Protocol::Gossipsub { idontwant: false }, 6),
    ("gossipsub D=8", Protocol::Gossipsub { idontwant: false }, 8),
    ("gossipsub+IDONTWANT D=8", Protocol::Gossipsub { idontwant: true }, 8),
    ("RLNC N=10 D=20, 2 chunks/peer", rlnc(10, 2), 20),
    ("RLNC N=10 D=40", rlnc(10, 1), 40),
    ("RLNC N=10 D=80", rlnc(10, 1), 80),
];

/// Simulates the charts' cases and writes `decode_cdf.png` and `sweep.png` into `dir`.
pub(super) fn write(args: &NetSimArgs, dir: &Path) -> Result<ExitCode, String> {
    register_font()?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let nodes = args.nodes;
    let capped = |c: Config| Config {
        upload_cap: Some(CAP_MBIT * 1e6 / 8.0),
        verify_ms: CAP_VERIFY_MS,
        decode_ms: CAP_DECODE_MS,
        ..c
    };
    let mut configs: Vec<Config> =
        CDF_CASES.iter().map(|&(_, p, d)| config(args, nodes, d, p)).collect();
    configs.extend(CDF_CASES.iter().map(|&(_, p, d)| capped(config(args, nodes, d, p))));
    let sweep = sweep_configs(args, &[nodes], &[1, 2]);
    let sweep_len = sweep.len();
    configs.extend(sweep);
    let reports = run_all(configs);
    let (cdf, sweep) = reports.split_at(reports.len() - sweep_len);

    let cdf_path = dir.join("decode_cdf.png");
    {
        let root = BitMapBackend::new(&cdf_path, (1600, 650)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let panels = root.split_evenly((1, 2));
        let per_link = format!(
            "{nodes} nodes, {:.0} MB/s per link, {:.0} ms latency, no CPU cost",
            args.bandwidth_mbs, args.latency_ms
        );
        let uplink = format!(
            "{nodes} nodes, {CAP_MBIT} Mbit/s uplink per node, verify {CAP_VERIFY_MS} ms, decode {CAP_DECODE_MS} ms"
        );
        cdf_panel(&panels[0], &per_link, &cdf[..CDF_CASES.len()])?;
        cdf_panel(&panels[1], &uplink, &cdf[CDF_CASES.len()..])?;
        root.present().map_err(plot_err)?;
    }
    let sweep_path = dir.join("sweep.png");
    {
        let root = BitMapBackend::new(&sweep_path, (1600, 1200)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let panels = root.split_evenly((2, 2));
        for (row, k) in [1usize, 2].into_iter().enumerate() {
            let rows: Vec<&Report> = sweep
                .iter()
                .filter(|r| match r.config.protocol {
                    Protocol::Rlnc { per_peer, .. } => per_peer == k,
                    Protocol::Gossipsub { .. } => true,
                })
                .collect();
            let what = format!("{nodes} nodes, per link, RLNC {k} chunk(s) per peer");
            sweep_panel(
                &panels[2 * row],
                &format!("time to 99% decoded (ms), {what}"),
                &rows,
                |r| r.time_to_99_ms.is_finite().then_some(r.time_to_99_ms),
            )?;
            sweep_panel(
                &panels[2 * row + 1],
                &format!("bytes sent per node (·B), {what}"),
                &rows,
                |r| Some(r.bytes_per_node_mean / r.config.size_bytes as f64),
            )?;
        }
        root.present().map_err(plot_err)?;
    }
    println!("wrote {} and {}", cdf_path.display(), sweep_path.display());
    Ok(ExitCode::SUCCESS)
}

/// Percentage of nodes decoded over time, one line per case (nodes that never decode leave the
/// line below 100%).
fn cdf_panel(area: &Chart<'_>, title: &str, reports: &[Report]) -> Result<(), String> {
    let t_max =
        reports.iter().filter_map(|r| r.decode_times_ms.last().copied()).fold(0.0f64, f64::max)
            * 1.05;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 17))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d(0.0..t_max.max(1.0), 0.0..101.0)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("time since the proposal (ms)")
        .y_desc("nodes able to decode (%)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(plot_err)?;
    for (i, (r, (label, ..))) in reports.iter().zip(CDF_CASES).enumerate() {
        let n = r.config.nodes as f64;
        let color = Palette99::pick(i).stroke_width(2);
        let mut points = vec![(0.0, 0.0)];
        for (j, &t) in r.decode_times_ms.iter().enumerate() {
            points.push((t, 100.0 * j as f64 / n));
            points.push((t, 100.0 * (j + 1) as f64 / n));
        }
        points.push((t_max, 100.0 * r.decode_times_ms.len() as f64 / n));
        chart
            .draw_series(LineSeries::new(points, color))
            .map_err(plot_err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)
}

/// One value per D (log axis) for gossipsub and each RLNC N; `value` None leaves the point out.
fn sweep_panel(
    area: &Chart<'_>,
    title: &str,
    reports: &[&Report],
    value: impl Fn(&Report) -> Option<f64>,
) -> Result<(), String> {
    let series_of = |r: &Report| match r.config.protocol {
        Protocol::Gossipsub { .. } => 0,
        Protocol::Rlnc { chunks, .. } => chunks,
    };
    let mut keys: Vec<usize> = reports.iter().map(|r| series_of(r)).collect();
    keys.sort_unstable();
    keys.dedup();
    let y_max = reports.iter().filter_map(|r| value(r)).fold(0.0f64, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 16))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d((5.0f64..90.0).log_scale(), 0.0..y_max.max(1.0))
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("mesh degree D (log scale)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(plot_err)?;
    for (i, key) in keys.into_iter().enumerate() {
        let label = if key == 0 { "gossipsub".to_string() } else { format!("RLNC N={key}") };
        let color = Palette99::pick(i).stroke_width(2);
        let points: Vec<(f64, f64)> = reports
            .iter()
            .filter(|r| series_of(r) == key)
            .filter_map(|r| value(r).map(|v| (r.config.degree as f64, v)))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color))
            .map_err(plot_err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart
            .draw_series(points.into_iter().map(|p| Circle::new(p, 4, color.filled())))
            .map_err(plot_err)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}
