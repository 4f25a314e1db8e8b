//! The start rate's rule: the generic cell rate algorithm (GCRA), a token
//! bucket kept as one number, the time at which the bucket would be full
//! again (the *theoretical arrival time* of the next start).
//!
//! With `n` starts per `per` and a burst of `b`, one start costs
//! `per / n`; a start may happen at time `t` when the bucket is not
//! empty, that is when `tat <= t + (b - 1) · per / n`, and it moves `tat`
//! to `max(tat, t) + per / n`. So starts are spaced `per / n` apart once the
//! burst is spent, and **in any window of length `per` at most `n + b - 1`
//! starts** (exactly `n` with the default burst of 1). Everything is kept
//! multiplied by `n`, in nanoseconds, so that `per / n` is never rounded and
//! long runs do not drift.

use std::time::Duration;

/// A start rate and its bucket.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rate {
    /// Starts per period.
    n: u32,
    /// The period, in nanoseconds.
    per: u64,
    /// How many starts may happen at once after a quiet spell.
    burst: u32,
    /// The theoretical arrival time, in nanoseconds on the stream's clock,
    /// times `n`.
    tat: u128,
}

/// Nanoseconds, saturating far beyond any run.
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl Rate {
    /// `n` starts per `per`, a burst of one. The caller checked both are
    /// above zero.
    pub(crate) fn new(n: u32, per: Duration) -> Self {
        Self {
            n,
            per: nanos(per),
            burst: 1,
            tat: 0,
        }
    }

    /// The rate in force: `(n, per)`.
    pub(crate) fn get(&self) -> (u32, Duration) {
        (self.n, Duration::from_nanos(self.per))
    }

    pub(crate) fn burst(&self) -> u32 {
        self.burst
    }

    pub(crate) fn set_burst(&mut self, burst: u32) {
        self.burst = burst;
    }

    /// A new rate at `now`: the bucket keeps the tokens it holds or owes,
    /// counted in starts, and refills at the new rate from now on (so a
    /// raise shortens the wait for the next token at once).
    pub(crate) fn set(&mut self, n: u32, per: Duration, now: u64) {
        let per = nanos(per);
        let now_old = u128::from(now) * u128::from(self.n);
        let now_new = u128::from(now) * u128::from(n);
        // Ahead of now, or behind it (tokens saved up, capped by the burst
        // when they are used), in the old rate's units: `per` per start.
        self.tat = if self.tat >= now_old {
            let ahead = self.tat - now_old;
            now_new + (ahead * u128::from(per)).div_ceil(u128::from(self.per))
        } else {
            let behind = now_old - self.tat;
            now_new.saturating_sub(behind * u128::from(per) / u128::from(self.per))
        };
        self.n = n;
        self.per = per;
    }

    /// The slack the burst gives, times `n`.
    fn tolerance(&self) -> u128 {
        u128::from(self.burst - 1) * u128::from(self.per)
    }

    /// Whether a start may happen at `now` (nanoseconds on the stream's
    /// clock).
    #[inline]
    pub(crate) fn allows(&self, now: u64) -> bool {
        self.tat <= u128::from(now) * u128::from(self.n) + self.tolerance()
    }

    /// A start happened at `now`.
    #[inline]
    pub(crate) fn take(&mut self, now: u64) {
        let now = u128::from(now) * u128::from(self.n);
        self.tat = self.tat.max(now) + u128::from(self.per);
    }

    /// When the next start may happen (nanoseconds on the stream's clock):
    /// the first time at which [`Rate::allows`] holds.
    pub(crate) fn next(&self) -> u64 {
        let due = self.tat.saturating_sub(self.tolerance());
        u64::try_from(due.div_ceil(u128::from(self.n))).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Contract: at most `n + burst - 1` starts in any window of `per`, and
    /// starts `per / n` apart once the burst is spent.
    #[test]
    fn starts_as_soon_as_allowed_keep_the_window_bound() {
        for (n, per, burst) in [(1, 10, 1), (3, 10, 1), (100, 1_000, 20), (7, 1_000, 3)] {
            let mut rate = Rate::new(n, Duration::from_nanos(per));
            rate.set_burst(burst);
            let mut starts = Vec::new();
            let mut now = 0;
            while starts.len() < 500 {
                if rate.allows(now) {
                    rate.take(now);
                    starts.push(now);
                } else {
                    let next = rate.next();
                    assert!(next > now, "next {next} at {now}");
                    assert!(rate.allows(next) && !rate.allows(next - 1));
                    now = next;
                }
            }
            let most = u64::from(n + burst - 1);
            for (at, &start) in starts.iter().enumerate() {
                let within = starts[at..]
                    .iter()
                    .take_while(|&&t| t < start + per)
                    .count();
                assert!(
                    within as u64 <= most,
                    "{within} starts in a window, n {n} burst {burst}"
                );
            }
            // The burst at once, then one per `per / n` (rounded up).
            assert!(starts[..burst as usize].iter().all(|&t| t == 0));
            let gap = per.div_ceil(u64::from(n));
            let last = starts[starts.len() - 1];
            assert!(last >= (starts.len() as u64 - u64::from(burst)) * per / u64::from(n));
            assert!(last <= (starts.len() as u64) * gap);
        }
    }

    /// Contract: a rate changed mid-run keeps the tokens the bucket holds
    /// or owes, counted in starts, and refills at the new rate from then on.
    #[test]
    fn a_new_rate_keeps_the_tokens_owed() {
        let mut rate = Rate::new(10, Duration::from_nanos(1_000));
        for _ in 0..5 {
            let next = rate.next();
            rate.take(next);
        }
        // Five starts 100 ns apart: the next at 500, owed in full at 450.
        assert_eq!(rate.next(), 500);
        rate.set(1, Duration::from_nanos(1_000), 450);
        // Half a start owed, now at 1,000 ns a start.
        assert_eq!(rate.next(), 950);
        rate.take(950);
        assert_eq!(rate.next(), 1_950);
        // Faster again, 100 ns into the wait: 900 ns of it left, a tenth.
        rate.set(10, Duration::from_nanos(1_000), 1_050);
        assert_eq!(rate.next(), 1_140);
    }
}
