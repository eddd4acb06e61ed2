//! What every PNG chart of the binary shares: the font its text is drawn with, plotters' errors as
//! one-line messages, and the boxed legend. Used by `gigagas net-sim --plots` and `gigagas bench`.

use plotters::{
    coord::{ranged1d::Ranged, Shift},
    prelude::*,
    style::FontStyle,
};

/// The font the charts' text is drawn with (Debian package `fonts-dejavu-core`, installed by
/// `make deps`).
pub(crate) const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// A chart area on the bitmap backend.
pub(crate) type Chart<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

/// A plotters error as a one-line message.
pub(crate) fn plot_err(e: impl std::fmt::Display) -> String {
    format!("plot: {e}")
}

/// Registers [`FONT`] under plotters' `sans-serif` family (once per process is enough; a second
/// call replaces the first).
pub(crate) fn register_font() -> Result<(), String> {
    let bytes = std::fs::read(FONT).map_err(|e| {
        format!("the charts need the font {FONT} (`make deps` installs fonts-dejavu-core): {e}")
    })?;
    plotters::style::register_font(
        "sans-serif",
        FontStyle::Normal,
        Box::leak(bytes.into_boxed_slice()),
    )
    .map_err(|_| format!("{FONT} is not a TrueType font"))
}

/// The series labels of `chart`, boxed, at `position`.
pub(crate) fn legend<'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, BitMapBackend<'a>, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(plot_err)
}
