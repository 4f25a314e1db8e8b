//! The rule's constants, each with why it is what it is (see the rule in
//! [`Aimd`](super::Aimd)'s documentation).

/// The default [`Aimd::tolerance`].
pub(super) const TOLERANCE: f64 = 1.02;
/// The default [`Aimd::backoff`].
pub(super) const BACKOFF: f64 = 0.9;
/// A sample that ran longer than this many times the unloaded run time is an
/// outlier: left out of the mean (a service's rare slow requests are not a
/// queue), and counted.
pub(super) const CLIP: f64 = 4.0;
/// A cut leaves a queue of up to this many standard errors: where the run
/// time varies that much, such a queue costs little and noise cuts less.
pub(super) const KEEP: f64 = 1.5;
/// A queue of fewer items never counts: past a capacity, every item beyond
/// it waits (a queue of one or more), so less is a run time that rises with
/// the load (a shared processor, a pool), not a capacity.
pub(super) const LEAST_QUEUE: f64 = 0.5;
/// Standard errors a queue must exceed to count in two rounds in a row, or in
/// one.
pub(super) const SUSPECT: f64 = 2.0;
pub(super) const SURE: f64 = 3.0;
/// The unloaded run time remembers about this many samples.
pub(super) const MEMORY: f64 = 512.0;
/// The unloaded run time needs this many samples before a queue can count.
pub(super) const FIRST_SAMPLES: f64 = 8.0;
/// Slow start's figure needs this many samples before a rise ends slow start,
/// and a rise must exceed this many standard errors ([`SURE`] in one round,
/// this many in two at the same limit).
pub(super) const EXIT_SAMPLES: f64 = 16.0;
pub(super) const EXIT: f64 = 1.5;
/// Before, a rise must be this large, and beyond three standard errors. A
/// run time that falls this much (two settled rounds this many times
/// faster, above where the unloaded one was measured) is measured again at
/// half the limit; less is learned as before (at 1.2 times, services whose
/// speed drifts were measured at half by chance: `tools/models --family
/// drift` lost 43 runs of 4,400).
pub(super) const LARGE_RISE: f64 = 1.4;
/// A figure measured after slow start this much above slow start's (and
/// beyond two standard errors of both) is measured again at half the limit:
/// a queue where it was measured would explain it.
pub(super) const HALF_RISE: f64 = 1.2;
/// That second measurement takes a round's worth of samples, and at least
/// this many (after a doubling that served no more, a full measurement).
pub(super) const HALF_SAMPLES: usize = 16;
/// A figure at half the limit clearly lower than the one above, but within
/// this many standard errors of it, is measured again before it counts (at
/// σ 0.6, the figures low by chance that passed were 3.1 to 3.6 standard
/// errors below; a queue at a capacity of 2 or 3 is far beyond).
pub(super) const CONFIRM: f64 = 5.0;
/// A doubling of slow start that served less than this many times as many
/// items a second as the limit below it (beyond three standard errors of a
/// doubling's gain) shows that limit at or past the capacity.
pub(super) const FLAT: f64 = 1.25;
/// Samples of settled rounds that measure the unloaded run time after slow
/// start: at least this many, and this many rounds' worth.
pub(super) const MEASURE: usize = 32;
pub(super) const MEASURE_ROUNDS: usize = 3;
/// At most this many run times are kept, in room reserved once: slow start's
/// figure keeps its first ones, a measurement its latest.
pub(super) const RUNS_KEPT: usize = 1024;
/// Rounds at the same limit before one that tells the mean run time as it is.
pub(super) const SETTLED: usize = 2;
/// A round binds if at most this share of its samples (rounded up) did not
/// reach the limit.
pub(super) const LOOSE: f64 = 0.1;
/// A limit reached by this share of the samples, or more, grows by one; the
/// share is the mean of the last rounds at the limit, up to this many.
pub(super) const SOMETIMES: f64 = 0.05;
pub(super) const REACHED_ROUNDS: usize = 4;
/// Held just below the ceiling for this many samples, it probes the ceiling
/// again; below a ceiling back-pressure set, after this many rounds if that
/// comes first.
pub(super) const PROBE_SAMPLES: usize = 160;
pub(super) const PROBE_ROUNDS: usize = 32;
/// Below a ceiling back-pressure set, this many times as many samples.
pub(super) const REFUSED_PROBE: usize = 2;
/// Cut to at most this share of the limit whose queue began the cuts, with
/// this many samples there, a run time that kept more than half of its
/// excess over the unloaded one means the queue was not one.
pub(super) const HALVED: f64 = 0.5;
pub(super) const HALVED_SAMPLES: f64 = 16.0;
/// Or this many, where their mean is clear of the midpoint by three standard
/// errors.
pub(super) const HALVED_EARLY: f64 = 4.0;
/// A probe a quarter above the limit the unloaded run time was measured at
/// shows a run time that rises with the load, not a queue, where the items
/// it added served more than this share of what they would if none of them
/// waited (past a capacity: none), beyond three standard errors; it decides
/// within this many settled rounds. The same share of the difference in
/// items in flight, taken less by a lower limit's queue than by a higher
/// one's, starts such a probe.
pub(super) const GRADIENT: f64 = 0.5;
pub(super) const GRADIENT_ROUNDS: usize = 6;
/// The default start: more than one, so that one slow item does not hold
/// the stream, and four rather than two, one doubling of slow start fewer.
pub(super) const START: usize = 4;
/// Slow start's doubling raises the limit by at most this many items in one
/// moment (completions with the same clock reading): where they all come at
/// once, as with a timer's tick, the whole doubling would start before any
/// refusal of it comes back (past a capacity of 64, 64 calls refused at
/// once: 1.3 % of a job of 5,000). A number of items, not a share of the
/// limit: a doubling of a small limit spread over two moments mixes rounds
/// at two limits, and a capacity of 8 with a queue was then passed with no
/// rise (a quarter of the limit: the family's capacity of 8 lost all 800
/// runs).
pub(super) const MOMENT_MOST: usize = 32;
/// The limit in force is kept for this many moments back: a refusal comes
/// back at once, so the item it refused started a moment or two ago; one
/// started earlier is judged by the items in flight, as before.
pub(super) const MOMENTS_KEPT: usize = 4;

/// The rounds that bound whose throughput sets the floor under the cuts:
/// enough that a drifting speed's slow stretch (a round or two) leaves a
/// faster one in them, few enough that a capacity that fell a little (a run
/// time less than 1 / `SERVED_FELL` times as long) is cut within 8 rounds
/// that bind (16: the family lost 402 of its 8,400 runs, its drops settling
/// late).
pub(super) const SERVED_ROUNDS: usize = 8;
/// A round whose run time, outliers left out, is 1 / this times that of the
/// round that served the most has a service that changed: the rounds before
/// it are forgotten. The drift family's speed moves by σ 0.1 to 0.2 a
/// period; 0.8 and 0.7 forgot them on its slow rounds (`tools/models
/// --family drift`, seeds 601 to 800, in a first version of the rule: 1,107
/// and 1,432 runs met against 1,664 at 0.6), and 0.5 kept the floor of the
/// family's capacity drop 32 → 16 (7,600 of 8,400 runs met).
pub(super) const SERVED_FELL: f64 = 0.6;
