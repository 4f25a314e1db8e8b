//! [`Aimd`]: the adaptive `workers` limit the crate ships. Its rule is written
//! once, in the type's documentation, for its users.
//!
//! Files by concern: this one holds the type and its builder; `sample.rs`
//! what each sample does; `rounds.rs` a round's end and each decision;
//! `growth.rs` growth after a round with no queue; `start.rs` slow start and
//! the measurements of the unloaded run time (after a rise, back-pressure or
//! a fall); `moved.rs` a run time that moved; `gradient.rs` a run time that
//! rises with the load (probes of a quarter more); `throughput.rs`
//! what the last rounds served, a floor under the cuts; `overload.rs`
//! back-pressure; `refusals.rs` refusals judged against the limit;
//! `figures.rs` what rounds show; `history.rs` the record of decisions;
//! `tuning.rs` the rule's constants.

mod figures;
mod gradient;
mod growth;
mod history;
mod moved;
mod overload;
mod refusals;
mod rounds;
mod sample;
mod start;
mod throughput;
mod tuning;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

// The rule's documentation links to them; the code is in `sample.rs`.
#[cfg(doc)]
use crate::adaptive::{Controller, Sample};
use figures::{Baseline, Seen};
use gradient::Gradient;
pub use history::{Decision, History};
use moved::Cuts;
use overload::Burst;
use refusals::Refusals;
use rounds::{Ended, Pool, Round};
use start::{Gained, Measuring};
use throughput::Throughput;
use tuning::{
    BACKOFF, CLIP, CONFIRM, EXIT, EXIT_SAMPLES, FIRST_SAMPLES, FLAT, GRADIENT, GRADIENT_ROUNDS,
    HALF_RISE, HALF_SAMPLES, HALVED, HALVED_EARLY, HALVED_SAMPLES, KEEP, LARGE_RISE, LEAST_QUEUE,
    LOOSE, MEASURE, MEASURE_ROUNDS, MEMORY, MOMENT_MOST, MOMENTS_KEPT, PROBE_ROUNDS, PROBE_SAMPLES,
    REACHED_ROUNDS, REFUSED_PROBE, RUNS_KEPT, SERVED_FELL, SERVED_ROUNDS, SETTLED, SOMETIMES,
    START, SURE, SUSPECT, TOLERANCE,
};

/// The adaptive [`Controller`]: finds how many workers a service takes before
/// its requests start to wait or it pushes back, and follows it as it changes.
///
/// `Aimd::new(min, max)` starts at 4, within `[min, max]`
/// ([`starting_at`](Self::starting_at) changes that), in slow start. Not at
/// 1: it learns only from completions, and at a limit of 1 a slow first item
/// (one of a service's rare slow requests, a cold cache) holds the whole
/// stream for its run time, with nothing learned; with more, the other
/// workers keep completing. Not at 2 either: each doubling of slow start
/// takes about two run times (its round counts only the items started after
/// the doubling, below), all of them spent below a large service's capacity,
/// and a start at 4 saves one. A service that takes fewer than 4 at a time
/// queues, or refuses, a call or two in that first round (`starting_at(1)`
/// where that is known). Its rule, in full:
///
/// **Rounds.** It decides once per *round*: as many samples as the limit.
/// After a change of the limit (out of slow start), the first completions, as
/// many as the larger of the two limits, are a warm-up: items that ran under
/// the old limit are still leaving. In slow start, which has no warm-up (it
/// would take twice as long), the items started before the last doubling are
/// left out of the round instead: most of a round's first completions are
/// theirs, and a queue the doubling made would hide behind them. A round
/// right after a change still favours the fast items (it ends as the first of
/// many new items complete); a round after two at the same limit (a warm-up
/// counts) is *settled*: it shows the run time as it is. A sample that ran
/// more than 4 times the unloaded run time is an *outlier*: left out of the
/// round's mean (a service's rare slow requests are not a queue), but
/// counted. A round *binds* if all but a tenth of its samples (rounded up)
/// found the limit reached ([`Sample::saturated`]).
///
/// **The queue.** With `n` the items in flight (the round's mean
/// [`Sample::in_flight`]), `mean` its mean run time and `base` the unloaded run
/// time, Little's law says `queue = n × (1 − base / mean)` items wait. Its
/// standard error comes from how much the run time varies and how many
/// samples the round and `base` hold; run times vary in proportion to their
/// length, so the noise is the unloaded run time's coefficient of variation
/// at the round's mean. A queue never counts below `n × (1 − 1 / tolerance)`
/// or half an item, whichever is more, nor before `base` has 8 samples
/// behind it: past a capacity, every item beyond it waits (a queue of one or
/// more), so a queue of less is a run time that rises with the load (a
/// processor or a pool the requests share), not a capacity, and cutting for
/// it costs throughput.
///
/// **Slow start** doubles the limit while rounds bind and show no rise. Its
/// figure of the unloaded run time is every run time it saw (its rounds, and
/// the items a round leaves out, which ran under the old limit), outliers taken
/// from their lower quartile up (a slow item or two among few samples would
/// lift a mean past any outlier test, and where slow requests are common the
/// median may fall among them): cut at 4 times the lower quartile, then at 4
/// times the mean of what each cut kept, until a cut keeps the same. That
/// figure favours the fast items, so it only ends slow start: once it holds
/// 16 samples, a round whose queue against it exceeds three standard errors
/// is a *rise*, and so is one beyond one and a half if
/// the next round at its limit (all of it in flight there) is beyond them too:
/// a doubling past the capacity costs a queue or refusals, and a rise that was
/// none costs the measurement below and the climb back, many run times on a
/// slow or large service. A rise so confirmed is taken as its first round
/// showed it: the second, all of it at the limit, shows a run time that rises
/// with the load (a shared processor, a pool) in full, and the measurement
/// below would take that for a queue. Before the figure holds 16 samples, only
/// a mean 40 % or more above it counts, and beyond three standard errors (a few
/// fast items make a low figure, and its spread is not known yet). Slow start
/// also ends at a round that does not bind (the source, not the limit, holds
/// the load back), and at back-pressure. A doubling takes effect one completion
/// at a time (each starts two items), and by no more than 32 items in one
/// moment (completions with the same clock reading): where completions all come
/// at once, as with a timer's tick, the whole doubling would otherwise start
/// before any refusal of it comes back.
///
/// Where every round of slow start queues (a capacity below the start),
/// its figure is of queued run times, and no round rises above it. What
/// gives such a service away is what it serves: items a second, those in
/// flight over the mean run time of all the round's samples, outliers too
/// (Little's law again, with no unloaded run time in it; an outlier held
/// its place as long, and a service that starves its waiting requests
/// shows its queue there). A doubling serves twice as many below the
/// capacity and no more past it, so a binding round that served less than
/// 1.25 times as many as slow start's round before it, and less than twice
/// as many by more than three standard errors (each round's spread, or the
/// figure's if more, once the figure has 8 samples), shows the limit below
/// at or past the capacity: slow start ends as at a rise (at the limit
/// below, if the round showed no rise as well).
///
/// **Measuring.** At a rise, the limit comes down to what the service took by
/// slow start's figure (those in flight less the queue), at most the highest
/// limit a round against that figure showed no rise at (in slow start, or
/// after back-pressure ended it), and is held there: after the warm-up and
/// one more round, settled rounds measure the unloaded run time, at least 32
/// samples and three rounds' worth, outliers again taken from their lower
/// quartile up. (When slow start ended because the source held the load back,
/// the source sets the load, and the limit grows as below while it measures.)
///
/// Slow start may have passed the limit it measures at with rounds too short to
/// show a queue there (a capacity of 2 or 3, where a round is a few samples),
/// and a queue taken for the unloaded run time would stay: nothing below that
/// limit would be tried again. So a measured figure over 1.2 times slow start's
/// (which favours the fast items, so less is no news) and beyond two standard
/// errors of both is measured again at half the limit, after the warm-up and a
/// round, from a round's worth of samples (at least 16: it only tells whether
/// the run time fell with the limit). There, a figure clearly lower (beyond the
/// tolerance and three standard errors) shows a queue at the limit above, and
/// half again is measured unless the figure above is clearly below this one
/// times the ratio of the two limits (what a queue at both would make it) by
/// 1.2 times (a figure at the higher limit comes out low, its rounds ending as
/// their first items complete), down to `min`; the first figure not clearly
/// lower than the one above leaves that one standing, and the limit goes back
/// to where it was measured. The lowest limit found to queue caps the ceiling
/// below. After a doubling that served no more, a figure measured at the limit
/// below it or higher (there with no rise; with one, where slow start's figure
/// said the service took as many) is measured again at half whatever it shows:
/// the doubling showed that limit at or past the capacity, and slow start's
/// figure may be of queued run times too. Measured lower, a figure over 1.2
/// times slow start's is measured again at half however few standard errors it
/// is above: a figure of queued run times varies as they do, and its spread hid
/// the queue (a capacity of 2, measured at 7 on 54 ms against slow start's 41,
/// held there). Each of these measurements at half is a full one, 32 samples
/// and three rounds' worth (of 16, at σ 0.6, a capacity that a doubling met
/// exactly was taken for a queue in a few runs in 200, and the unloaded run
/// time set too low). A figure at half clearly lower, but within five standard
/// errors, is measured again, as many samples, and the two taken together
/// decide: where run times are skewed, a figure low by chance has a low spread
/// with it, and passes for clearly lower more often than its standard errors
/// say (at σ 0.6, in 1 to 3 runs of 200, a full measurement at 16 came out 3.1
/// to 3.6 standard errors below the one at 32, the capacity passed for a queue,
/// and the unloaded run time stayed a quarter too low). Each second measurement
/// costs a few rounds at half the limit (a third, where it is measured again);
/// they come only after a rise's measurement that shows this much, or after
/// such a doubling.
///
/// The round that showed the rise is then tested against what was measured:
///
/// - no queue beyond two standard errors (and no limit found to queue): slow
///   start's figure made the rise. Slow start goes on from that round's
///   limit, doubling only after two binding rounds in a row there show no
///   queue (the measured figure may be high by chance, and a doubling past
///   the capacity costs refusals);
/// - a queue: what the service took, by the measured figure, give or take one
///   and a half standard errors, sets the *ceiling* (one more than that, and
///   above the limit the figure was measured at), and the limit grows
///   towards it as below.
///
/// Back-pressure that ends slow start, once refusals of the items then in
/// flight beyond what the base rate explains confirm it (not one refusal
/// alone), is followed at once by a measurement of the unloaded run time, at
/// the limit it backed off to: a service that queues, then refuses, refuses
/// only once its queue is full, and the back-off leaves most of that queue
/// standing. Its rounds, each within the noise of a slow start figure that
/// varies much, would teach that figure the queue round by round (a cache of
/// 16 that queued 16 more, half its reads 50 ms and half 4, taught it twice
/// its run time, and the limit held at 32 for good). A figure measured there
/// above slow start's by 1.2 times and two standard errors of both, as after
/// a rise, is measured again at half the limit, a full measurement (one
/// round's worth, 16 samples of that cache, left a queue that doubled its run
/// time within the noise). A figure there clearly lower (beyond the tolerance
/// and three standard errors) shows the queue: it stands, and what the
/// service took at the limit above by it, give or take one and a half
/// standard errors, sets the ceiling, as after a rise; else the first stands
/// and the limit goes back. No half again: a back-off lands at the refusals,
/// a queue's length above the capacity at most, and each test of a half is
/// one more chance for a figure low by chance to pass for a queue (at σ 0.6,
/// in one run of 200, a second half measured 7.4 ms against 10, and the
/// capacity above it passed for a queue). Such a measurement does not decide
/// whether slow start goes on, as a rise's does: a probe of its level that
/// passes still resumes it (below).
///
/// After back-pressure in slow start with no figure yet (a `starting_at`
/// limit refused at once), or one refusal alone, rounds are compared with
/// slow start's figure until a rise is measured the same way, but a rise
/// counts only beyond three standard errors: those rounds follow a warm-up
/// and show the mean run time as it is, while the figure favours the fast
/// items (on a service with no queue and a run time of σ 0.45, it was 10 to
/// 15 % low, and a rise within three standard errors was measured in most
/// runs, a few rounds at four fifths of the limit).
///
/// **Each round**, once measured:
///
/// - **no queue**: the limit grows, only if the round binds and the one
///   before it did too, at the same limit (a warm-up counts): by half the gap
///   to just below the *ceiling* (the lowest limit that last showed a queue
///   or back-pressure), where it holds; every 160 samples held it tries the
///   ceiling itself (however small the limit: at 2, every 80 rounds), and
///   below a ceiling back-pressure set, within 32 rounds (the refusal may
///   have been the base rate's). If the ceiling shows no queue it is stale:
///   the limit grows by one, then by twice as much each round that binds (2,
///   4, 8, ...) until a queue shows. A limit reached now and then but not
///   binding grows by one: the source is about as fast as the limit. Now and
///   then means by at least 5 % of the samples, on average over the last
///   rounds at this limit (up to 4; a higher limit is reached less often, so
///   it earns its own growth). Just below the ceiling such a limit holds and
///   probes the ceiling as a binding one does. A limit that is not reached
///   never grows;
/// - **a queue beyond two standard errors but within three**: it counts only
///   if the next round at the same limit shows one too (a slow item or two
///   can do that);
/// - **the settled rounds at one limit, taken together**, two or more, show a
///   queue beyond two standard errors of their pooled samples: it counts (a
///   queue smaller than one round's noise shows in several);
/// - **a queue**: the limit comes down to what the service took, the items in
///   flight less those waiting, leaving up to one and a half standard errors
///   of queue (where the run time varies that much such a queue costs little,
///   and noise cuts less: a cut too deep costs throughput until the limit
///   climbs back): at least one lower. When the limit did not bind (the
///   source held some back), it comes down from the limit by the queue
///   instead. The limit it came from becomes the ceiling. Out of slow start
///   and of the measurements, a round that binds is cut no lower than *what
///   the service served* (below), which may hold the limit where it stands.
///
/// **Refusals** (an [`overload`](Sample::overload) sample) are judged against
/// the limit first: a service may refuse a share of its calls whatever the
/// load (another tenant's quota, a flaky shard), with the same status as its
/// back-pressure, and a refusal rate that does not move with the limit must
/// not hold the limit down. The *base rate* is the share of calls refused,
/// learned over about 4,096 calls, taken as if 32 answered calls came first
/// (a few calls tell too little, and most of slow start's first refusals are
/// the load's); it counts refusal *events* (a refusal within two calls of the
/// one before is the same event, corrected for the refusals that fall that
/// close by chance), so that the load's own floods hardly move it. The
/// *level* is the limit where refusals last counted as back-pressure.
///
/// A refusal is judged against the lower of the base rate and the refusal
/// rate with fewer items in flight. Every call is tallied by the items in
/// flight when it completed (over about 4,096 calls); the tallies from one
/// fewer than the refusal's down, pooled until they hold 512 calls, give
/// that rate, taken as an upper bound: three refusals more than they hold,
/// over at least 32 calls (3 in 32 with no calls at all: a limit that never
/// went lower must not learn from its own refusals that they are the base
/// rate; if they are, the cut they make tallies calls below, which then
/// show it). A service that refuses whatever the load refuses as
/// often with fewer in flight; one that refuses for load does not. So
/// refusals that come only with more in flight count, whatever the base
/// rate learned from them (a service refused just above its capacity, where
/// the test needs many calls, would otherwise teach the base rate its own
/// refusals and keep the limit above the capacity for good).
///
/// - Below the level, or with none, refusals count only once they run well
///   above the base rate: a sequential test (a log likelihood ratio, from the
///   last back-pressure) of the base rate, taken as at most one half, against
///   a rise to 8 times it (at least 5 points above it, at most halfway to 1:
///   a rise taken as nearly 1 makes each answered call outweigh several
///   refusals, which hides any rise above a high base rate); each refusal adds
///   evidence and each answered call takes some away, and back-pressure is
///   evidence of 10: a few refusals close together (five in ten calls, when
///   slow start passes a capacity with no refusal before), never one alone.
///   Or once the rate with fewer in flight explains as many refusals among
///   the calls started at this limit, five or more, with less than one
///   chance in 1,000, those calls weighed as no more than the ones that rate
///   is over (the same share of fewer calls: a bound of a few hundred calls
///   is not exact, and held for thousands of calls at one limit a base rate
///   a little above it would count): a limit a few items above a capacity
///   refuses only the calls beyond it, a few times the base rate, which the
///   eightfold test never reaches (such limits stayed put, refusing 10 to
///   15 % of their calls). Where neither counts a refusal at the limit,
///   but the rate with fewer in flight is over fewer than 128 calls (and
///   fewer than the calls at this limit) and the refusals at this limit,
///   five or more, run above it, the limit steps down by one: not
///   back-pressure (no back-off, ceiling or level), a way to learn that
///   rate. At a steady limit every call completes with the limit in
///   flight, so only a lower limit teaches it (a limit one above a
///   capacity of 24 had only slow start's 48 calls below, a bound of 6 %
///   against the 8 % it refused, and stayed put).
/// - At or above the level, refusals are expected: one counts when the base
///   rate explains as many refusals among the calls started at this limit
///   with less than one chance in five.
///
/// A refusal that counts is back-pressure, and decides at once, from the
/// limit in force (slow start's doubling takes effect one completion at a
/// time, so the limit in force may be below the doubled one), or from the
/// items in flight when it came back if fewer (refused items leave at once,
/// and the stream would fill the limit again with calls the service refuses
/// too), or from the limit in force when the refused item started if lower
/// (known for the last four moments: spawned, each task starts its next
/// item as it completes one, so the items in flight when a refusal comes
/// back count those started after the refused one, as many as the moment's
/// completions allowed; in place the stream starts them only once the
/// moment's completions are heard of): it becomes the
/// level and the ceiling, and the limit × [`backoff`](Self::backoff)
/// (default 0.9, at least one lower). Refusals of items started before that
/// (the same news), beyond those the base rate explains among the items then
/// in flight, each lower the ceiling by one from the limit at the back-off,
/// and the limit below it: a service that refused *k* of *L* took *L − k*. A
/// measurement under way starts again at the lower limit. A ceiling that one
/// refusal alone set is tried again after one round with no queue, unless
/// that refusal came at or above the level refusals last counted at (that
/// level found again, whatever ceiling a queue set below it since); a probe
/// of a level that passes with no back-pressure shows the refusal came
/// whatever the load: the level goes, and slow start goes on if that
/// refusal ended it (unless a rise was measured since, which decides). A
/// rise that the measurement does not confirm restores the ceiling
/// back-pressure set before it.
///
/// **The unloaded run time**, once measured, learns (over about 512 samples)
/// only from settled rounds with no queue at a limit no higher than where it
/// was measured or learned: above, a queue within the noise could hide, and
/// learning there would let it creep up with the load. A settled round faster
/// than it by more than the noise teaches it wherever it comes, unless it
/// binds above where the figure was measured or learned and runs 1.4 times
/// faster or more: the run time fell (a cache warmed up), and learned there
/// it would keep any queue at that limit as unloaded (a cache of 16 that
/// warmed up at 24 learned the queued run time, and the limit stood at 32
/// for good). The first such round holds the limit; a second at the same
/// limit has both measured again at half the limit, a full measurement, as
/// after back-pressure: clearly lower there (beyond the tolerance and three
/// standard errors), it shows the queue, stands, and what the service took
/// at the limit above by it sets the ceiling; else the faster figure stands
/// and the limit goes back.
///
/// **A run time that moved.** The first round whose mean run time showed a
/// queue and cut the limit is remembered while the limit stays at or below
/// its limit and rounds keep showing a queue (a round with none forgets it:
/// the cuts worked; but not while its mean run time is still nearer that
/// round's than the unloaded one, since at a limit of one or two a round is
/// too small to show a queue at all). A queue that large leaves with the
/// cuts, and its share of the run time with it: once the limit is at half
/// that round's or less, the first 16 samples there tell, or as few as 4
/// whose mean is three standard errors (the unloaded run time's spread, in
/// proportion to the mean) from the midpoint of the two. If their mean is
/// still nearer that
/// round's than the unloaded run time, the queue was not one: the run time
/// itself moved (a slower version deployed, a colder cache), or the unloaded
/// figure was too low. Their mean becomes the unloaded run time, the ceiling
/// goes, and the limit goes back as far as that round allows with it (its
/// items in flight × the new figure / its mean). Either way the round is then
/// forgotten; back-pressure forgets it too, since refusals cut without a
/// queue.
///
/// **A run time that rises with the load.** Requests that slow each other
/// down (a processor, a disk or a pool they share) run a little longer at
/// every limit, capacity or not: against an unloaded run time measured
/// lower, every limit above it shows a queue, and the cuts alone creep down
/// to where the rise is within the noise, far below what the service
/// serves. One limit's rounds cannot tell that from a queue (by Little's
/// law, both show items that did not run); a higher limit can: past a
/// capacity the service serves no more, below one it serves more, each
/// item a little slower. So a queue in a settled round at a limit that
/// binds, lower than the one with the most in flight since the unloaded
/// run time was measured, where the service took less (those in flight
/// less the queue) by more than half the difference in items in flight,
/// and by no more than all of it (more is a capacity that fell: that queue
/// is the one to compare with from then on), starts a *probe*: the limit
/// goes a quarter above where the unloaded run time was measured (never as
/// far as refusals last counted as back-pressure; and not from fewer than
/// 8 in flight, where a quarter is less than two items, too few to tell),
/// and is held. Its settled rounds, outliers counted (Little's law needs every
/// item), are compared with the measured figure: what the added items
/// would have served at the lower run time, against what they served. More
/// than half of it, beyond three standard errors, or as it stands after 6
/// settled rounds (half is midway between a capacity, where they serve
/// none, and a service that serves every item it is given): the run time
/// there becomes the unloaded one, the ceiling goes, and a quarter more is
/// probed the same way. Less: the probe ends, and its round is decided as
/// any other (a queue: the limit comes down to what the service took). The
/// first round there favours the fast items, so it can only end a probe
/// that served too little. A probe may start once after each measurement
/// of the unloaded run time, and again after each that served more.
/// A service whose throughput keeps rising by more than half an item for
/// each item added is followed that way up to `max`, whatever its run time
/// does: where the run time matters more than the throughput, `max` is
/// where to say so.
///
/// **What the service served.** A run time can rise without a queue: where
/// the service's speed drifts (a noisy neighbour, a collector's pause: every
/// request running in one stretch slowed alike), a slow round reads as a
/// queue against an unloaded run time the fast rounds taught, and cuts for
/// such rounds alone walk the limit down far below a capacity no queue
/// reached. The throughput tells them apart: by Little's law a round served
/// its items in flight over its mean run time (outliers counted). Of the
/// last 8 rounds that bound, out of slow start and of the measurements, the
/// one that served the most, at the lowest run time known (their means and
/// the unloaded one), would keep that many items busy, rounded down: a cut
/// for a queue in a round that binds goes no lower (and holds the limit if
/// that is where it stands; never above it). Past a capacity a round serves
/// about the capacity over the unloaded run time, so this floor is about
/// the capacity (a little above where the best of those rounds was fast by
/// chance, or the unloaded figure sits high) and a real queue is cut to it.
/// A round whose run time, outliers left out, is 1.67 times that of the
/// round that served the most (its items each serving less than 60 % as
/// much) has a service that changed (a capacity that fell, or a limit far
/// past one): the rounds before it are forgotten, and the floor is what it
/// served. They are forgotten too when the unloaded run time is measured
/// again or moved, and when slow start goes on. The floor bounds only that
/// cut: back-pressure, the cuts of slow start and of the measurements, and
/// a round that does not bind (a source that held items back served less
/// than the service could) are cut as before.
///
/// The limit stays within `[min, max]`. Ignored outputs ([`Verdict::Ignore`])
/// and items that never complete are not heard of at all.
///
/// What it costs: a capacity that falls so that the run time at the limit
/// grows less than 1.67 times is cut no lower than the rounds before the
/// fall served, for up to 8 rounds that bind, until they have left the
/// floor; the queue stands meanwhile. Finding a capacity rise
/// needs a probe, so every 160 samples
/// held below the ceiling one round runs one item more than last showed a
/// queue (an item queued, or a refusal, per probe, when nothing changed); a
/// ceiling back-pressure set is probed half as often, and with a base rate of
/// refusals four times as rarely again (or every 32 rounds held). At a limit
/// of 1 or 2 a probe's queued item is a large share of a round: one in 160
/// samples keeps the share of queued items small. A probe of a quarter
/// more, where a queue at a lower limit showed the service taking less,
/// queues up to a quarter of the limit for a few rounds (at most 8) past a
/// capacity; there is one at most after each measurement of the unloaded
/// run time. Slow start's doubling
/// past a service with no queue costs up to one refused call per item the
/// service took, when they all complete at once, and the measurement after
/// that back-pressure, once confirmed, holds the limit where it backed off
/// for a warm-up and four rounds (and
/// as long again at half of it, where the figure stands clearly above slow
/// start's). Slow start from 4 past a
/// service that takes fewer costs a doubling that served no more, then a
/// measurement at 4 and at each half below it until one runs as long as the
/// one above (for a capacity of 2: at 2, then 32 samples at a limit of 1).
/// It
/// sees a queue of one request at a steady service, but where the run time
/// varies a queue within the noise goes unseen: it keeps the limit a few
/// items above the capacity rather than below it. A service that lets waiting
/// requests starve (it serves newcomers first) hides its queue from it: the
/// starved requests complete late and rarely, as outliers, and the rounds
/// show the newcomers' run times. (Spawned, a worker polls its next item in
/// the poll its last one completed in, before the requests that completion
/// woke: a service that lets a newcomer take a freed place starves its
/// waiting requests then; the guide's adaptive page has the figures.)
///
/// What it holds: room for 1 024 run times, twice, for a round's samples up
/// to 1 024, and for the refusal tallies of up to 1 025 levels of items in
/// flight (about 40 KiB in all at a `max` of 1 024 or more), reserved when it is
/// built: it never allocates after, so how a run happens to go never decides
/// how often it allocates. A measurement at a limit above about 340 takes
/// more samples than that (three rounds' worth): its figure is of the latest
/// 1 024.
///
/// [`with_history`](Self::with_history) records each round's decision for a
/// plot or a log.
///
/// [`Verdict::Ignore`]: crate::Verdict::Ignore
///
/// # Examples
///
/// Requests of 10 ms to a service that takes 8 at a time and queues the rest
/// (on tokio's paused clock, so the figures are exact):
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use bounded_buffered::{Aimd, BoundedStreamExt};
/// use futures::{StreamExt, stream};
/// use tokio::sync::Semaphore;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let service = Arc::new(Semaphore::new(8));
/// let call = move |n: u32| {
///     let service = Arc::clone(&service);
///     async move {
///         let _permit = service.acquire().await.expect("never closed");
///         tokio::time::sleep(Duration::from_millis(10)).await;
///         n
///     }
/// };
/// let aimd = Aimd::new(1, 64).with_history(1_000);
/// let history = aimd.history().expect("recorded");
/// let mut replies = stream::iter(0..2_000)
///     .map(call)
///     .bounded(1, 0)
///     .adaptive(aimd, |_: &u32| false)
///     .clock(|| tokio::time::Instant::now().into_std());
/// while let Some(_) = replies.next().await {}
/// let rounds = history.rounds();
/// // It started at 4: the first round doubled it. Slow start doubled it past
/// // 8 and saw the queue at 16.
/// assert_eq!(rounds.first().unwrap().limit, 8);
/// assert!(rounds.iter().any(|round| round.limit == 16));
/// // It measures at 8, closes in on the ceiling (10, then 9: each queues),
/// // and from 200 ms on stays at what the service takes, trying 9 now and
/// // then (an item queues, and it comes back).
/// let after: Vec<_> = rounds
///     .iter()
///     .filter(|round| round.at > Duration::from_millis(200))
///     .map(|round| round.limit)
///     .collect();
/// assert!(after.iter().all(|limit| (7..=9).contains(limit)), "{after:?}");
/// let at_8 = after.iter().filter(|&&limit| limit == 8).count();
/// assert!(at_8 * 4 > after.len() * 3, "{after:?}");
/// assert_eq!(rounds.last().unwrap().base, Some(Duration::from_millis(10)));
/// # }
/// ```
#[derive(Debug)]
pub struct Aimd {
    min: usize,
    max: usize,
    limit: usize,
    tolerance: f64,
    backoff: f64,
    slow_start: bool,
    /// The unloaded run time.
    base: Option<Baseline>,
    /// The unloaded run time is still slow start's figure, not measured.
    provisional: bool,
    /// Slow start's run times, its figure's samples; while measuring, the
    /// latest measured run times.
    runs: Vec<f64>,
    /// The run times measured so far (`runs` keeps the latest [`RUNS_KEPT`]).
    measured_runs: usize,
    /// The run times of the current round of slow start, added to `runs` once
    /// the round is compared with the figure.
    pending: Vec<f64>,
    /// The highest limit at which rounds against slow start's figure showed
    /// no clear rise.
    clean: usize,
    /// Measuring the unloaded run time, and why.
    measuring: Option<Measuring>,
    /// A measurement after a rise decided whether slow start goes on.
    start_decided: bool,
    /// Slow start's last binding round with no rise.
    gained: Option<Gained>,
    /// Room to take a quartile in.
    scratch: Vec<f64>,
    /// The settled rounds at the current limit, taken together.
    pool: Option<Pool>,
    round: Round,
    /// Rounds ended at the current limit (a warm-up counts as one).
    same: usize,
    /// The last round (or warm-up) reached the limit.
    bound: bool,
    /// The share of samples that reached the limit: the mean over the last
    /// (up to 4) rounds ended at the current limit, and how many there were.
    reached: (f64, usize),
    /// The lowest limit at which a queue or back-pressure was last seen.
    ceiling: Option<usize>,
    /// Rounds held just below the ceiling since it was last probed.
    held: usize,
    /// The next growth past a ceiling that proved stale.
    step: usize,
    /// The last round showed a queue, to be confirmed by this one.
    suspect: Option<Seen>,
    /// A settled round that binds ran faster than the unloaded run time by
    /// 1.4 times, above where that was measured: the next settled round at
    /// this limit confirms it.
    falling: Option<Seen>,
    /// A round of slow start rose within three standard errors: the next
    /// round at its limit confirms it. That round, and its queue.
    marginal: Option<(Ended, f64)>,
    /// The round whose queue began the cuts since the limit was last higher,
    /// and what the rounds at half its limit or less showed since.
    cuts: Option<Cuts>,
    /// The refusals of the items in flight at the last back-off.
    burst: Option<Burst>,
    /// The limit in force: below `limit` while slow start's doubling takes
    /// effect, and the raises since a sample last found it reached.
    paced: usize,
    unstarted: usize,
    /// When the last sample completed.
    moment: Duration,
    /// The last moments before it, latest first, each with the limit in
    /// force at its end: what a refusal of an item started then tested.
    /// `usize::MAX` where none is known yet.
    moments: [(Duration, usize); MOMENTS_KEPT],
    /// Every refusal heard of, judged against the limit.
    refusals: Refusals,
    /// The ceiling was set by one refusal alone: probe it after a round.
    recheck: bool,
    /// Probes of what a quarter more items in flight serve.
    gradient: Gradient,
    /// What the last rounds that bound served: a floor under the cuts.
    throughput: Throughput,
    history: Option<History>,
}

impl Aimd {
    /// A controller that keeps the limit within `[min, max]`, starting at 4
    /// (or the nearer bound, if 4 is outside them).
    ///
    /// # Panics
    ///
    /// If `min` is 0 (a limit of 0 would pause the stream for good) or `min >
    /// max`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::{Aimd, Controller};
    ///
    /// assert_eq!(Aimd::new(1, 100).initial(), 4);
    /// assert_eq!(Aimd::new(1, 2).initial(), 2);
    /// assert_eq!(Aimd::new(8, 100).initial(), 8);
    /// ```
    #[track_caller]
    pub fn new(min: usize, max: usize) -> Self {
        assert!(
            min > 0,
            "`Aimd::new` needs `min >= 1`: a limit of 0 would pause the stream for good"
        );
        assert!(
            min <= max,
            "`Aimd::new` needs `min <= max`, got {min} > {max}"
        );
        Self {
            min,
            max,
            limit: START.clamp(min, max),
            tolerance: TOLERANCE,
            backoff: BACKOFF,
            slow_start: true,
            base: None,
            provisional: true,
            runs: Vec::with_capacity(RUNS_KEPT),
            measured_runs: 0,
            // A round ends at `limit` samples or `limit` outliers.
            pending: Vec::with_capacity(max.saturating_mul(2).min(RUNS_KEPT)),
            clean: 0,
            measuring: None,
            start_decided: false,
            gained: None,
            scratch: Vec::with_capacity(RUNS_KEPT),
            pool: None,
            round: Round::default(),
            same: 0,
            bound: false,
            reached: (0.0, 0),
            ceiling: None,
            held: 0,
            step: 1,
            suspect: None,
            falling: None,
            marginal: None,
            cuts: None,
            burst: None,
            refusals: Refusals::new(max),
            paced: START.clamp(min, max),
            unstarted: 0,
            moment: Duration::ZERO,
            moments: [(Duration::ZERO, usize::MAX); MOMENTS_KEPT],
            recheck: false,
            gradient: Gradient::default(),
            throughput: Throughput::default(),
            history: None,
        }
    }

    /// Starts at `limit` (clamped to `[min, max]`) instead of 4, still in
    /// slow start: `starting_at(1)` for a service known to take one at a time,
    /// a higher one for a service known to take many.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::{Aimd, Controller};
    ///
    /// assert_eq!(Aimd::new(1, 100).starting_at(16).initial(), 16);
    /// assert_eq!(Aimd::new(1, 100).starting_at(500).initial(), 100);
    /// ```
    pub fn starting_at(mut self, limit: usize) -> Self {
        self.limit = limit.clamp(self.min, self.max);
        self.paced = self.limit;
        self
    }

    /// The least rise of the mean run time over the unloaded one that counts
    /// as a queue, however steady the service: 1.02 (2 %) by default. Where
    /// the run time varies, the noise sets a higher bar by itself; this one is
    /// for steady services, where a rise of `1 / n` is one item waiting of
    /// `n` in flight. A queue of less than half an item never counts, whatever
    /// the tolerance (see the rule).
    ///
    /// # Panics
    ///
    /// If `tolerance` is not above 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Aimd;
    ///
    /// let _patient = Aimd::new(1, 64).tolerance(1.5); // only a 50 % rise counts
    /// ```
    #[track_caller]
    pub fn tolerance(mut self, tolerance: f64) -> Self {
        assert!(
            tolerance > 1.0,
            "`Aimd::tolerance` must be above 1, got {tolerance}"
        );
        self.tolerance = tolerance;
        self
    }

    /// The factor applied to the limit on back-pressure: 0.9 by default. The
    /// refusals of the items in flight then tell how much further to go (see
    /// the rule), so a gentle factor costs few refusals.
    ///
    /// # Panics
    ///
    /// If `backoff` is not in `(0, 1)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Aimd;
    ///
    /// let _gentle = Aimd::new(1, 64).backoff(0.7); // 30 % off on back-pressure
    /// ```
    #[track_caller]
    pub fn backoff(mut self, backoff: f64) -> Self {
        assert!(
            backoff > 0.0 && backoff < 1.0,
            "`Aimd::backoff` must be between 0 and 1, got {backoff}"
        );
        self.backoff = backoff;
        self
    }

    /// Records the latest `capacity` decisions, readable through
    /// [`Aimd::history`] while the stream runs. The memory is reserved here,
    /// once.
    ///
    /// # Examples
    ///
    /// ```
    /// use bounded_buffered::Aimd;
    ///
    /// assert!(Aimd::new(1, 8).history().is_none());
    /// assert!(Aimd::new(1, 8).with_history(10).history().is_some());
    /// ```
    pub fn with_history(mut self, capacity: usize) -> Self {
        self.history = Some(History {
            rounds: Arc::new(Mutex::new(VecDeque::with_capacity(capacity))),
            capacity,
        });
        self
    }

    /// A handle to the recorded decisions, if [`Aimd::with_history`] was called.
    pub fn history(&self) -> Option<History> {
        self.history.clone()
    }
}

#[cfg(test)]
impl Aimd {
    /// The room reserved for run times: its slow start figure's or a
    /// measurement's, a round's, and the quartile's.
    pub(crate) fn room(&self) -> [usize; 3] {
        [
            self.runs.capacity(),
            self.pending.capacity(),
            self.scratch.capacity(),
        ]
    }
}
