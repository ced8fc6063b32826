//! The commands about traces: `record` one, `trace summary|plot|replay` one, and the
//! plots written to files.

pub mod plot;
pub mod record;
pub mod trace_cmd;
