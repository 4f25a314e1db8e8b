//! The fair-share rule (contract point 36) on random schedules of arrivals,
//! starts and finishes, through the same `Admission::pick` the engine calls:
//! over every run of starts during which two tenants both have an item their
//! cap allows, `|Sᵢ·stepᵢ − Sⱼ·stepⱼ| ≤ stepᵢ + stepⱼ` (exact: the steps are
//! the rule's own integers), and a start goes to some allowed item whenever
//! there is one (work-conserving). 2,000 seeds.

use std::future::{Ready, ready};
use std::sync::Arc;

use super::Rng;
use crate::admission::{Admission, Admits, Unweighted};
use crate::tenants::fair::FairShare;
use crate::tenants::{Share, Tenanted};

type Item = Tenanted<usize, Ready<()>>;

struct Sim {
    rule: Admission<FairShare<usize>, Unweighted>,
    shares: Vec<Arc<Share<usize>>>,
    waiting: Vec<Item>,
    /// The tickets of the items running, by tenant.
    running: Vec<(usize, usize)>,
    /// Per start: the tenant that started, and which tenants had an allowed
    /// item just before it.
    starts: Vec<(usize, Vec<bool>)>,
    cap: usize,
}

impl Sim {
    fn allowed(&self) -> Vec<bool> {
        let mut allowed = vec![false; self.shares.len()];
        for item in &self.waiting {
            let tenant = item.tenant();
            allowed[*tenant] |= self.shares[*tenant]
                .running
                .load(std::sync::atomic::Ordering::Relaxed)
                < self.cap;
        }
        allowed
    }

    fn start(&mut self) -> bool {
        let allowed = self.allowed();
        let picked = self.rule.pick(self.waiting.iter().map(|item| (item, true)));
        let Some(at) = picked else {
            assert!(!allowed.contains(&true), "an allowed item and no start");
            return false;
        };
        let item = self.waiting.remove(at);
        let tenant = *item.tenant();
        assert!(allowed[tenant], "a start of an item its cap does not allow");
        // Oldest first within a tenant.
        assert!(
            self.waiting[..at]
                .iter()
                .all(|older| *older.tenant() != tenant),
            "a tenant's newer item started before an older one"
        );
        self.rule.unqueued(&item);
        let (keys, ()) = self.rule.started(&item);
        self.running.push((tenant, keys));
        self.starts.push((tenant, allowed));
        true
    }

    /// The bound over every run of starts in which `i` and `j` both had an
    /// allowed item at each start.
    fn check_bound(&self) {
        let tenants = self.shares.len();
        for i in 0..tenants {
            for j in i + 1..tenants {
                let (si, sj) = (self.shares[i].step as i128, self.shares[j].step as i128);
                let mut from = 0;
                while from < self.starts.len() {
                    let mut diff: i128 = 0;
                    for (to, (tenant, allowed)) in self.starts.iter().enumerate().skip(from) {
                        if !(allowed[i] && allowed[j]) {
                            break;
                        }
                        if *tenant == i {
                            diff += si;
                        } else if *tenant == j {
                            diff -= sj;
                        }
                        assert!(
                            diff.abs() <= si + sj,
                            "tenants {i} and {j} over starts {from}..={to}: {diff} > {}",
                            si + sj
                        );
                    }
                    from += 1;
                }
            }
        }
    }
}

#[test]
fn busy_tenants_share_starts_within_one_start_each_and_no_allowed_item_is_passed_over() {
    for seed in 0..2_000 {
        let mut rng = Rng::new(seed);
        let tenants = 2 + rng.below(4);
        let cap = if rng.below(3) == 0 {
            1 + rng.below(3)
        } else {
            usize::MAX
        };
        let shares: Vec<_> = (0..tenants)
            .map(|slot| Arc::new(Share::new(slot, 1 + rng.below(5) as u32, slot, usize::MAX)))
            .collect();
        let mut sim = Sim {
            rule: Admission {
                keys: FairShare::new(cap),
                weights: Unweighted,
            },
            shares,
            waiting: Vec::new(),
            running: Vec::new(),
            starts: Vec::new(),
            cap,
        };
        for _ in 0..300 {
            match rng.below(6) {
                // A burst of arrivals for one tenant.
                0 => {
                    let tenant = rng.below(tenants);
                    for _ in 0..1 + rng.below(6) {
                        let item = Tenanted::new(Arc::clone(&sim.shares[tenant]), ready(()));
                        sim.rule.queued(&item);
                        sim.waiting.push(item);
                    }
                }
                // A running item finishes.
                1 | 2 if !sim.running.is_empty() => {
                    let (_, keys) = sim.running.swap_remove(rng.below(sim.running.len()));
                    Admits::<Item>::finished(&mut sim.rule, (keys, ()));
                }
                _ => {
                    sim.start();
                }
            }
        }
        sim.check_bound();
    }
}
