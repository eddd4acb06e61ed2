//! `gigagas-bench net-plot`: the PNG chart of multi-process devnet runs
//! (`testing/devnet_net.py --json`): per run and protocol the delivery time from the proposer's
//! publish to each node's decode (p50, p90, p99), and per block size the p99.
//!
//! Flow: read each JSON file (a list of one summary per protocol), keep the runs that converged,
//! draw two panels with plotters (shared helpers in `chart.rs`), write one PNG.

use crate::chart::{legend, plot_err, register_font};
use clap::Args;
use plotters::prelude::*;
use serde::Deserialize;
use std::{path::PathBuf, process::ExitCode};

/// Arguments of `gigagas-bench net-plot`.
#[derive(Debug, Args)]
pub(crate) struct NetPlotArgs {
    /// `devnet_net.py --json` outputs, one per devnet size (a list of per-protocol summaries).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The PNG to write.
    #[arg(long, default_value = "docs/img/devnet_net.png")]
    out: PathBuf,
    /// A label per file, comma-separated (`16 nodes 6 s`, say), put before each protocol's name;
    /// default: the number of nodes.
    #[arg(long, value_delimiter = ',')]
    labels: Vec<String>,
    /// Title line above the panels (the machine and the links, say).
    #[arg(long, default_value = "")]
    title: String,
}

/// One block of a run: its size and its delivery times (ms).
#[derive(Debug, Deserialize)]
struct BlockSummary {
    bytes: f64,
    delivery_ms_p99: Option<f64>,
}

/// The part of a `devnet_net.py` summary the chart reads.
#[derive(Debug, Deserialize)]
struct Summary {
    protocol: String,
    #[serde(default)]
    nodes: usize,
    /// The file's label and the protocol (set after reading).
    #[serde(skip)]
    label: String,
    #[serde(default)]
    ok: bool,
    delivery_ms_p50: Option<f64>,
    delivery_ms_p90: Option<f64>,
    delivery_ms_p99: Option<f64>,
    #[serde(default)]
    blocks: Vec<BlockSummary>,
}

/// Runs `net-plot`.
pub(crate) fn run(args: NetPlotArgs) -> Result<ExitCode, String> {
    let mut runs: Vec<Summary> = Vec::new();
    for (i, file) in args.files.iter().enumerate() {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let summaries: Vec<Summary> =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        for mut s in summaries.into_iter().filter(|s| s.ok && s.delivery_ms_p99.is_some()) {
            let prefix =
                args.labels.get(i).cloned().unwrap_or_else(|| format!("{} nodes", s.nodes));
            s.label = format!("{prefix} {}", s.protocol);
            runs.push(s);
        }
    }
    if runs.is_empty() {
        return Err("net-plot: no converged run with deliveries in the files".into());
    }
    register_font()?;
    if let Some(dir) = args.out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let root = BitMapBackend::new(&args.out, (1600, 700)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let root = if args.title.is_empty() {
        root
    } else {
        root.titled(&args.title, ("sans-serif", 20)).map_err(plot_err)?
    };
    let panels = root.split_evenly((1, 2));
    percentiles_panel(&panels[0], &runs)?;
    size_panel(&panels[1], &runs)?;
    root.present().map_err(plot_err)?;
    println!("net-plot: wrote {}", args.out.display());
    Ok(ExitCode::SUCCESS)
}

/// p50 / p90 / p99 of each run (x: "N nodes, protocol").
fn percentiles_panel(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    runs: &[Summary],
) -> Result<(), String> {
    let y_max = runs.iter().filter_map(|r| r.delivery_ms_p99).fold(0.0f64, f64::max) * 1.1;
    let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    let n = runs.len();
    let mut chart = ChartBuilder::on(area)
        .caption("delivery: proposer's publish to each node's decode", ("sans-serif", 17))
        .margin(15)
        .x_label_area_size(60)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0.0..y_max.max(1.0))
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                labels[i as usize].clone()
            } else {
                String::new()
            }
        })
        .x_desc("run, protocol")
        .y_desc("ms")
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(plot_err)?;
    type Pick = fn(&Summary) -> Option<f64>;
    let series: [(&str, Pick, RGBColor); 3] = [
        ("p50", |r| r.delivery_ms_p50, BLUE),
        ("p90", |r| r.delivery_ms_p90, GREEN),
        ("p99", |r| r.delivery_ms_p99, RED),
    ];
    for (label, pick, color) in series {
        let points: Vec<(f64, f64)> =
            runs.iter().enumerate().filter_map(|(i, r)| pick(r).map(|v| (i as f64, v))).collect();
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 6, color.filled())))
            .map_err(plot_err)?
            .label(label)
            .legend(move |(x, y)| Circle::new((x + 10, y), 6, color.filled()));
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

/// p99 delivery per block against the block's size, one line per run.
fn size_panel(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    runs: &[Summary],
) -> Result<(), String> {
    let points = |r: &Summary| -> Vec<(f64, f64)> {
        let mut p: Vec<(f64, f64)> = r
            .blocks
            .iter()
            .filter(|b| b.bytes > 10_000.0)
            .filter_map(|b| b.delivery_ms_p99.map(|v| (b.bytes / 1000.0, v)))
            .collect();
        p.sort_by(|a, b| a.0.total_cmp(&b.0));
        p
    };
    let all: Vec<(f64, f64)> = runs.iter().flat_map(points).collect();
    let x_max = all.iter().map(|p| p.0).fold(0.0f64, f64::max) * 1.05;
    let y_max = all.iter().map(|p| p.1).fold(0.0f64, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption("p99 delivery per block, by block size", ("sans-serif", 17))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_max.max(1.0), 0.0..y_max.max(1.0))
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("block + BAL on the wire (KB, before coding)")
        .y_desc("p99 ms")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(plot_err)?;
    for (i, r) in runs.iter().enumerate() {
        let color = Palette99::pick(i).stroke_width(2);
        let p = points(r);
        chart
            .draw_series(LineSeries::new(p.clone(), color))
            .map_err(plot_err)?
            .label(r.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart
            .draw_series(p.into_iter().map(|q| Circle::new(q, 3, color.filled())))
            .map_err(plot_err)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}
