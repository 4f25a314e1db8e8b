//! The server side: the keys a run uses and the Lua scripts for the steps
//! that must be one atomic step on the server (a read and the pending count it
//! leaves; an acknowledgement and what it commits).

use std::sync::LazyLock;

use redis::Script;

/// The consumer group every consumer and the reclaimer join.
pub const GROUP: &str = "workers";

/// The keys of one run, all under one prefix.
#[derive(Clone, Debug)]
pub struct Keys {
    /// The stream of jobs (the producer's entries, retries and released
    /// entries): `job`, `attempt`.
    pub stream: String,
    /// Entry id → how many times a consumer ran it: a count above 1 is a
    /// duplicate delivery that ran.
    pub runs: String,
    /// Job id → who applied it, at which attempt: the service's record, written
    /// at most once per job (`HSETNX`, the job id is the idempotency key).
    pub applied: String,
    /// Job id → how many calls of the service found the job already applied.
    pub repeats: String,
    /// Entry id → how many `XACK`s of it removed it from the pending list.
    pub acks: String,
    /// Entry id → how many `XACK`s of it found it acknowledged already.
    pub noop_acks: String,
    /// The dead-letter stream: jobs that failed on their last attempt.
    pub dead: String,
    /// Consumer → the largest pending count the broker reported right after
    /// one of its reads.
    pub peaks: String,
    /// Entry id → 1 for entries a consumer handed back at a graceful stop.
    pub released: String,
    /// Consumers that connected (the orchestrator waits for them).
    pub ready: String,
    /// The ids pending for the consumer killed in the crash run, read from the
    /// broker right after the kill.
    pub crash: String,
    prefix: String,
}

impl Keys {
    pub fn new(prefix: &str) -> Self {
        let key = |name: &str| format!("{prefix}:{name}");
        Keys {
            stream: key("jobs"),
            runs: key("runs"),
            applied: key("applied"),
            repeats: key("repeats"),
            acks: key("acks"),
            noop_acks: key("noop-acks"),
            dead: key("dead"),
            peaks: key("peaks"),
            released: key("released"),
            ready: key("ready"),
            crash: key("crash"),
            prefix: prefix.to_string(),
        }
    }

    /// The list of entry ids one consumer committed, in the order it committed
    /// them.
    pub fn log(&self, consumer: &str) -> String {
        format!("{}:log:{consumer}", self.prefix)
    }
}

/// One page for a consumer: `XREADGROUP .. COUNT page .. >` (entries never
/// delivered to anyone), and the consumer's pending count right after it,
/// kept in `peaks` when it is the largest so far. Returns the pending count,
/// an empty cursor, then `id, job, attempt` per entry.
///
/// KEYS: stream, peaks. ARGV: group, consumer, page.
pub static READ: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"
local reply = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3], 'STREAMS', KEYS[1], '>')
local out = {{'', ''}}
if reply then
  for _, entry in ipairs(reply[1][2]) do
    {ENTRY}
  end
end
{PENDING}
"
    ))
});

/// One page for the reclaimer: `XAUTOCLAIM` of up to `page` entries that have
/// been pending, for any consumer, for at least `min_idle` ms, from `cursor`;
/// then its pending count as [`READ`] does. Returns the pending count, the
/// next cursor, then `id, job, attempt` per entry.
///
/// KEYS: stream, peaks. ARGV: group, consumer, page, min idle (ms), cursor.
pub static CLAIM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"
local reply = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[4], ARGV[5], 'COUNT', ARGV[3])
local out = {{'', reply[1]}}
for _, entry in ipairs(reply[2]) do
  if entry then
    {ENTRY}
  end
end
{PENDING}
"
    ))
});

/// Appends one entry's `id, job, attempt` to `out`.
const ENTRY: &str = r"
    local job, attempt = '', ''
    for i = 1, #entry[2], 2 do
      if entry[2][i] == 'job' then job = entry[2][i + 1] end
      if entry[2][i] == 'attempt' then attempt = entry[2][i + 1] end
    end
    out[#out + 1] = entry[1]
    out[#out + 1] = job
    out[#out + 1] = attempt";

/// Sets `out[1]` to the consumer's pending count and keeps the largest in
/// `peaks`; returns `out`.
const PENDING: &str = r"
local pending = 0
local summary = redis.call('XPENDING', KEYS[1], ARGV[1])
if summary[4] then
  for _, consumer in ipairs(summary[4]) do
    if consumer[1] == ARGV[2] then pending = tonumber(consumer[2]) end
  end
end
if pending > tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0') then
  redis.call('HSET', KEYS[2], ARGV[2], pending)
end
out[1] = tostring(pending)
return out";

/// The service a job calls, with the job id as its idempotency key: counts the
/// run of the entry, and applies the job once (`HSETNX`); a repeat is
/// recognised and counted, not applied again. A failed call only counts the
/// run. Returns 1 (applied), 0 (a repeat) or -1 (failed).
///
/// KEYS: runs, applied, repeats. ARGV: entry id, job, attempt, consumer,
/// `ok` or `fail`.
pub static SERVICE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
if ARGV[5] ~= 'ok' then return -1 end
local applied = redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[4] .. ' attempt ' .. ARGV[3])
if applied == 0 then redis.call('HINCRBY', KEYS[3], ARGV[2], 1) end
return applied",
    )
});

/// A consumer's commit of one completed job, after the job's future
/// completed: `XACK`, and only if that acknowledged the entry (nobody had
/// before), what goes with it in the same step: a failed job is added again
/// with the next attempt, or to the dead-letter stream after the last; and the
/// entry id is appended to the consumer's log. Returns `XACK`'s count.
///
/// KEYS: stream, acks, noop acks, log, dead. ARGV: group, entry id, `done` or
/// `failed`, job, attempt, attempts allowed.
pub static COMMIT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local acked = redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
if acked == 0 then
  redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
  return 0
end
redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
if ARGV[3] == 'failed' then
  local attempt = tonumber(ARGV[5])
  if attempt < tonumber(ARGV[6]) then
    redis.call('XADD', KEYS[1], '*', 'job', ARGV[4], 'attempt', tostring(attempt + 1))
  else
    redis.call('XADD', KEYS[5], '*', 'job', ARGV[4], 'attempt', ARGV[5], 'entry', ARGV[2])
  end
end
redis.call('RPUSH', KEYS[4], ARGV[2])
return acked",
    )
});

/// A graceful stop's last step: every entry still pending for this consumer
/// (delivered by a read, never run: the rest of a page the stream did not pull
/// after `close()`) is added to the stream again and acknowledged, in one
/// step, so another consumer takes it at once instead of after the
/// reclaimer's idle time. Returns how many.
///
/// KEYS: stream, acks, released. ARGV: group, consumer.
pub static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local reply = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', 1000000, 'STREAMS', KEYS[1], '0')
local released = 0
for _, entry in ipairs(reply[1][2]) do
  if entry[2] then
    redis.call('XADD', KEYS[1], '*', unpack(entry[2]))
    redis.call('XACK', KEYS[1], ARGV[1], entry[1])
    redis.call('HINCRBY', KEYS[2], entry[1], 1)
    redis.call('HSET', KEYS[3], entry[1], 1)
    released = released + 1
  end
end
return released",
    )
});

/// The orchestrator's view of a run: the group's pending count and lag
/// (entries not yet delivered), jobs applied, jobs dead-lettered.
///
/// KEYS: stream, applied, dead. ARGV: group.
pub static PROGRESS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local pending, lag = -1, -1
for _, group in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local fields = {}
  for i = 1, #group, 2 do fields[group[i]] = group[i + 1] end
  if fields['name'] == ARGV[1] then
    pending = fields['pending']
    if fields['lag'] then lag = fields['lag'] end
  end
end
return {pending, lag, redis.call('HLEN', KEYS[2]), redis.call('XLEN', KEYS[3])}",
    )
});
