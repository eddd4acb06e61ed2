//! The PNG of `gigagas hw`: four panels — parallel scaling on the mainnet blocks (measured and
//! projected), random-read IOPS by queue depth, the RSS and page cache during the chain import,
//! and the largest gas per block within the first budget by thread count and design. Also the
//! font every chart of the project draws with.

use crate::{
    model::{Design, Model, Target},
    HwError, Report,
};
use plotters::{coord::ranged1d::Ranged, prelude::*, style::FontStyle};
use std::path::Path;

/// The font the charts' text is drawn with (Debian package `fonts-dejavu-core`, installed by
/// `make deps`).
pub const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

pub use crate::error::PlotError;

/// A plotters error as a [`PlotError::Draw`].
pub fn plot_err(e: impl std::fmt::Display) -> PlotError {
    PlotError::Draw(e.to_string())
}

/// Registers [`FONT`] under plotters' `sans-serif` family (once per process is enough; a second
/// call replaces the first).
///
/// # Errors
/// [`PlotError::FontMissing`], [`PlotError::FontNotTrueType`].
pub fn register_font() -> Result<(), PlotError> {
    let bytes =
        std::fs::read(FONT).map_err(|source| PlotError::FontMissing { path: FONT, source })?;
    plotters::style::register_font(
        "sans-serif",
        FontStyle::Normal,
        Box::leak(bytes.into_boxed_slice()),
    )
    .map_err(|_| PlotError::FontNotTrueType(FONT))
}

/// The series labels of `chart`, boxed, at `position`.
///
/// # Errors
/// [`PlotError::Draw`].
pub fn legend<'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, BitMapBackend<'a>, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> Result<(), PlotError> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(plot_err)
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

const COLORS: [RGBColor; 4] =
    [RGBColor(31, 119, 180), RGBColor(214, 39, 40), RGBColor(44, 160, 44), RGBColor(148, 103, 189)];

/// Draws `report`'s four panels into `path` (1600×1100 PNG).
///
/// # Errors
/// [`HwError::Plot`] when the font is missing or the file cannot be written.
pub fn write(path: &Path, report: &Report, model: &Model) -> Result<(), HwError> {
    register_font()?;
    let root = BitMapBackend::new(path, (1600, 1100)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let title = format!(
        "gigagas hw: {} ({} cores)",
        report.machine.cpu_model.as_deref().unwrap_or("unknown CPU"),
        report.machine.cores
    );
    let root = root.titled(&title, ("sans-serif", 24)).map_err(plot_err)?;
    let panels = root.split_evenly((2, 2));
    scaling(&panels[0], report)?;
    reads(&panels[1], report)?;
    memory(&panels[2], report)?;
    capacity(&panels[3], report, model)?;
    Ok(root.present().map_err(plot_err)?)
}

fn log2_axis(max_threads: usize) -> std::ops::Range<f64> {
    0.0..(max_threads.max(2) as f64).log2() + 0.2
}

fn scaling(area: &Area<'_>, r: &Report) -> Result<(), PlotError> {
    let top = r.exec.projected.iter().map(|p| p.mgas_per_s).fold(1.0, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption(
            "mainnet blocks: Mgas/s by threads (points measured, lines projected)",
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(log2_axis(64), 0.0..top)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("threads (log2)")
        .y_desc("Mgas/s")
        .x_label_formatter(&|x| format!("{:.0}", 2f64.powf(*x)))
        .draw()
        .map_err(plot_err)?;
    for (i, mega) in [false, true].into_iter().enumerate() {
        let name = if mega { "megablock" } else { "per block" };
        let c = COLORS[i];
        let line: Vec<(f64, f64)> = r
            .exec
            .projected
            .iter()
            .filter(|p| p.megablock == mega)
            .map(|p| ((p.threads as f64).log2(), p.mgas_per_s))
            .collect();
        chart
            .draw_series(LineSeries::new(line, c.stroke_width(2)))
            .map_err(plot_err)?
            .label(format!("{name}, projected"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        let points = r
            .exec
            .measured
            .iter()
            .filter(|p| p.megablock == mega)
            .map(|p| Circle::new(((p.threads as f64).log2(), p.mgas_per_s), 5, c.filled()));
        chart.draw_series(points).map_err(plot_err)?;
    }
    let seq = r.exec.sequential_mgas_per_s;
    chart
        .draw_series(LineSeries::new(vec![(0.0, seq), (6.2, seq)], BLACK.stroke_width(1)))
        .map_err(plot_err)?
        .label(format!("sequential, 1 core: {seq:.0}"))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

fn reads(area: &Area<'_>, r: &Report) -> Result<(), PlotError> {
    let sweeps: Vec<_> =
        [&r.disk, &r.rocksdb_warm, &r.rocksdb_cold].into_iter().flatten().collect();
    let top = sweeps.iter().flat_map(|s| s.points.iter().map(|p| p.iops)).fold(10.0, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption("random reads: IOPS by queue depth", ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d(log2_axis(64), (1.0..top * 2.0).log_scale())
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("queue depth (log2)")
        .y_desc("IOPS")
        .x_label_formatter(&|x| format!("{:.0}", 2f64.powf(*x)))
        .draw()
        .map_err(plot_err)?;
    for (i, s) in sweeps.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let pts: Vec<(f64, f64)> =
            s.points.iter().map(|p| ((p.queue_depth as f64).log2(), p.iops.max(1.0))).collect();
        let label = match (s.direct, s.cold) {
            (true, _) => format!("{} (O_DIRECT)", s.target),
            (false, false) if s.target.contains("cold") => {
                format!("{} (page cache NOT dropped)", s.target)
            }
            _ => s.target.clone(),
        };
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(plot_err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)
}

fn memory(area: &Area<'_>, r: &Report) -> Result<(), PlotError> {
    let mb = |b: u64| b as f64 / (1u64 << 20) as f64;
    let rows = &r.chain.sequential().blocks;
    let top =
        rows.iter().map(|b| mb(b.rss_bytes.max(b.page_cache_bytes))).fold(1.0, f64::max) * 1.1;
    let n = rows.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("engine, sequential ({}): memory by block", r.chain.workload),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..n + 1.0, 0.0..top)
        .map_err(plot_err)?;
    chart.configure_mesh().x_desc("blocks imported").y_desc("MiB").draw().map_err(plot_err)?;
    let rss: Vec<u64> = rows.iter().map(|b| b.rss_bytes).collect();
    let cache: Vec<u64> = rows.iter().map(|b| b.page_cache_bytes).collect();
    for (i, (name, values)) in [("process RSS", rss), ("page cache", cache)].into_iter().enumerate()
    {
        let c = COLORS[i];
        let pts: Vec<(f64, f64)> =
            values.iter().enumerate().map(|(k, &v)| (k as f64 + 1.0, mb(v))).collect();
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(plot_err)?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)
}

fn capacity(area: &Area<'_>, r: &Report, model: &Model) -> Result<(), PlotError> {
    let budget = r.capacity.first().map_or(3.0, |c| c.budget_s);
    let threads = crate::exec::thread_counts(64);
    let curves: Vec<(String, Vec<(f64, f64)>)> = Design::ALL
        .into_iter()
        .flat_map(|d| {
            let mut v = vec![(false, d)];
            if d == Design::Parallel && model.cold.is_some() {
                v.push((true, d));
            }
            v
        })
        .map(|(cold, d)| {
            let pts = threads
                .iter()
                .map(|&t| {
                    let target = Target { cold, ..Target::machine(t) };
                    ((t as f64).log2(), model.max_gas(budget, d, target) / 1e6)
                })
                .collect();
            (format!("{}{}", d.name(), if cold { ", cold reads" } else { "" }), pts)
        })
        .collect();
    let top = curves.iter().flat_map(|(_, p)| p.iter().map(|x| x.1)).fold(1.0, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("model: largest gas per block within {budget} s (this core's speed)"),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d(log2_axis(64), 0.0..top)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("threads (log2)")
        .y_desc("Mgas per block")
        .x_label_formatter(&|x| format!("{:.0}", 2f64.powf(*x)))
        .draw()
        .map_err(plot_err)?;
    for (i, (name, pts)) in curves.into_iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(plot_err)?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    let here = (r.machine.cores as f64).log2();
    chart
        .draw_series(LineSeries::new(vec![(here, 0.0), (here, top)], BLACK.mix(0.4)))
        .map_err(plot_err)?
        .label("this machine")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
    legend(&mut chart, SeriesLabelPosition::UpperLeft)
}
