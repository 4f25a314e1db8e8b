//! Services with no queue that refuse at once beyond their capacity, across
//! capacities and how much the run time varies (issue 34: at most 1 % of the
//! calls wasted, with a margin, up to σ 0.6). Refusals are the only signal:
//! the run time never shows the load.

use crate::models::{Dist, Model, Overflow};

const CAPACITIES: [(usize, &str); 4] = [(6, "6"), (16, "16"), (32, "32"), (64, "64")];
const SIGMAS: [(f64, &str); 5] = [
    (0.0, "deterministic"),
    (0.15, "σ 0.15"),
    (0.3, "σ 0.3"),
    (0.45, "σ 0.45"),
    (0.6, "σ 0.6"),
];

/// The sweep: every capacity with every σ, 10 ms on average.
pub fn models() -> Vec<Model> {
    let mut models = Vec::new();
    for (capacity, c) in CAPACITIES {
        for (sigma, s) in SIGMAS {
            let service = if sigma == 0.0 {
                Dist::Fixed(10.0)
            } else {
                Dist::LogNormal { mean: 10.0, sigma }
            };
            // Model names are `&'static str`: a few, made once.
            let name: &'static str = Box::leak(format!("refuse-only {s}, {c}").into_boxed_str());
            models.push(Model {
                capacity,
                overflow: Overflow::Refuse,
                ..Model::new(name, service)
            });
        }
    }
    models
}
