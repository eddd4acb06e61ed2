//! `gigagas bench`'s chart (default `target/bench/speedup.png`): speedup against threads (on a
//! log2 axis), per block and for the all-blocks megablock — measured in this run, projected from its
//! one-thread latencies, the machine's ceiling — next to the published study's curves.
//!
//! Ours are ratios to the plain revm loop measured in the same run; the study's are ratios to its
//! own one-thread run (its figures in ../shared/MISSION.md).

use crate::{
    chart::{legend, plot_err, register_font},
    report::{published_curves, Report},
};
use gigagas_executor::Scheduler;
use plotters::{element::DashedPathElement, prelude::*};
use std::path::Path;

/// The x coordinate of `threads`: log2, so that 1, 2, 4, … 32 are evenly spaced.
fn x(threads: usize) -> f64 {
    (threads.max(1) as f64).log2()
}

/// Draws the chart of `r` into `path` (PNG, 1200 × 750 pixels), creating its folder.
pub(crate) fn write(path: &Path, r: &Report) -> Result<(), String> {
    register_font()?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mega = r.blocks;
    let measured = |batch: usize| -> Vec<(f64, f64)> {
        r.runs
            .iter()
            .filter(|row| row.scheduler == Scheduler::Ols && row.batch == batch)
            .map(|row| (x(row.threads), row.speedup))
            .collect()
    };
    let projected = |batch: usize| -> Vec<(f64, f64)> {
        r.projection
            .iter()
            .flat_map(|p| &p.projection)
            .filter(|row| row.scheduler == Scheduler::Ols && row.batch == batch)
            .map(|row| (x(row.threads), row.speedup))
            .collect()
    };
    let [per_block, megablock] = published_curves().map(|curve| -> Vec<(f64, f64)> {
        let one = curve.first().map_or(1.0, |&(_, m)| m);
        curve.iter().map(|&(t, m)| (x(t), m / one)).collect()
    });
    let mut ceiling: Vec<(f64, f64)> = vec![(x(1), 1.0)];
    ceiling.extend(r.ceilings.iter().map(|c| (x(c.threads), c.speedup)));

    let series: [(String, Vec<(f64, f64)>); 7] = [
        ("projected, per block (ols)".into(), projected(1)),
        (format!("projected, megablock of {mega} (ols)"), projected(mega)),
        ("measured, per block (ols)".into(), measured(1)),
        (format!("measured, megablock of {mega} (ols)"), measured(mega)),
        ("ceiling: N plain revm loops at once".into(), ceiling),
        ("study, per block (vs its 1 thread)".into(), per_block),
        ("study, 50-block megablock (vs its 1 thread)".into(), megablock),
    ];
    let y_max =
        series.iter().flat_map(|(_, points)| points.iter().map(|p| p.1)).fold(1.0f64, f64::max)
            * 1.1;

    let root = BitMapBackend::new(path, (1200, 750)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let title = format!(
        "speedup vs threads: {} blocks, {:.1} Mgas; measured on {} cores ({})",
        r.blocks,
        r.gas as f64 / 1e6,
        r.cores,
        r.cpu_model.as_deref().unwrap_or("unknown CPU")
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.25f64..5.25, 0.0..y_max)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("threads")
        .y_desc("speedup (ours: over the plain revm loop of this run)")
        .x_labels(6)
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-6 && *x >= 0.0 {
                format!("{}", 1u64 << (x.round() as u32))
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(plot_err)?;

    // Colours: per block blue, megablock red; projection solid, measurement as dots, the study
    // dashed, the ceiling as grey rings.
    let blue = RGBColor(31, 119, 180);
    let red = RGBColor(214, 39, 40);
    let grey = RGBColor(110, 110, 110);
    for (i, (label, points)) in series.into_iter().enumerate() {
        if points.is_empty() {
            continue;
        }
        let color = match i {
            0 | 2 | 5 => blue,
            1 | 3 | 6 => red,
            _ => grey,
        };
        let style = color.stroke_width(2);
        match i {
            0 | 1 => {
                chart
                    .draw_series(LineSeries::new(points.clone(), style))
                    .map_err(plot_err)?
                    .label(label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
                chart
                    .draw_series(points.into_iter().map(|p| Circle::new(p, 3, style)))
                    .map_err(plot_err)?;
            }
            4 => {
                let ring = color.stroke_width(3);
                chart
                    .draw_series(points.into_iter().map(|p| Circle::new(p, 11, ring)))
                    .map_err(plot_err)?
                    .label(label)
                    .legend(move |(x, y)| Circle::new((x + 10, y), 6, ring));
            }
            2 | 3 => {
                let filled = color.filled();
                chart
                    .draw_series(points.into_iter().map(|p| Circle::new(p, 7, filled)))
                    .map_err(plot_err)?
                    .label(label)
                    .legend(move |(x, y)| Circle::new((x + 10, y), 6, filled));
            }
            _ => {
                chart
                    .draw_series(DashedLineSeries::new(points.clone(), 8, 6, style))
                    .map_err(plot_err)?
                    .label(label)
                    .legend(move |(x, y)| {
                        DashedPathElement::new(vec![(x, y), (x + 20, y)], 5, 3, style)
                    });
                chart
                    .draw_series(
                        points.into_iter().map(|p| TriangleMarker::new(p, 5, color.filled())),
                    )
                    .map_err(plot_err)?;
            }
        }
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(plot_err)
}
