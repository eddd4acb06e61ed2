//! What every PNG chart of the binary shares: the font its text is drawn with, plotters' errors as
//! one-line messages, and the boxed legend (defined in `gigagas-hw`'s `plot`, whose `gigagas hw`
//! chart uses them too). Used by `gigagas-bench net-sim --plots`, `bench` and `replay`.

use plotters::{coord::Shift, prelude::*};

pub(crate) use gigagas_hw::plot::{legend, plot_err, register_font};

/// A chart area on the bitmap backend.
pub(crate) type Chart<'a> = DrawingArea<BitMapBackend<'a>, Shift>;
