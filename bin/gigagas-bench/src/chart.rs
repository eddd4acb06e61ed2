//! What every PNG chart of the binary shares: the font its text is drawn with, plotters' errors as
//! one-line messages, and the boxed legend — `gigagas-hw`'s `plot` (whose `gigagas hw` chart uses
//! them too), as the one-line messages this binary's commands report. Used by
//! `gigagas-bench net-sim --plots`, `bench` and `replay`.

use plotters::{coord::ranged1d::Ranged, coord::Shift, prelude::*};

/// A chart area on the bitmap backend.
pub(crate) type Chart<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

/// A plotters error as a one-line message.
pub(crate) fn plot_err(e: impl std::fmt::Display) -> String {
    gigagas_hw::plot::plot_err(e).to_string()
}

/// Registers the charts' font (see [`gigagas_hw::plot::register_font`]).
pub(crate) fn register_font() -> Result<(), String> {
    gigagas_hw::plot::register_font().map_err(|e| e.to_string())
}

/// The series labels of `chart`, boxed, at `position` (see [`gigagas_hw::plot::legend`]).
pub(crate) fn legend<'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, BitMapBackend<'a>, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    gigagas_hw::plot::legend(chart, position).map_err(|e| e.to_string())
}
