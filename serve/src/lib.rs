//! Headroom's metrics endpoint, for Prometheus: `headroom serve` and the app's setting.
//!
//! [`exposition`] writes metric families in the Prometheus text format (0.0.4) or, when the
//! scraper asks for it, OpenMetrics 1.0. [`metrics::Metrics`] turns the sampler's latest
//! reading and the jobs into those families and renders both formats once per sample into a
//! [`metrics::MetricsHandle`]: a scrape only copies the rendered bytes, so it does no kernel
//! reads and no formatting. [`server`] serves them over HTTP/1.1 with hyper on a
//! single-threaded tokio runtime, bounded against slow and hostile clients, and fair at its
//! limit (`connections`).

#![cfg_attr(
    test,
    allow(clippy::too_many_lines, reason = "a test reads as one scenario")
)]
// The OS is called through headroom-os only (ARCHITECTURE.md).
#![forbid(unsafe_code)]

mod connections;
pub mod exposition;
pub mod metrics;
pub mod server;

pub use metrics::{JobMetric, Metrics, MetricsHandle};
pub use server::{is_loopback, start, Running, ServeError, ServerConfig};
