//! Critical-path projection (filled in below).
