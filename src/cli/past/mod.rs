//! The commands about past runs: `history` (with stageload's history imported), `fit`
//! ("will it fit?"), and the run's past and record every job command shares (`runs`).

pub mod fit;
pub mod history;
pub mod runs;
pub mod stageload_history;
