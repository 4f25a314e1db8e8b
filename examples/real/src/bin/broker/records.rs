//! The orchestrator's queries of the broker's records: keys, hashes, lists,
//! the group's pending entries and the consumers' commit logs.

use std::collections::HashMap;

use redis::Connection;

use crate::lua::{GROUP, Keys};

pub fn delete_keys(conn: &mut Connection, pattern: &str) {
    let keys: Vec<String> = redis::cmd("KEYS").arg(pattern).query(conn).expect("KEYS");
    if !keys.is_empty() {
        redis::cmd("DEL").arg(&keys).query::<()>(conn).expect("DEL");
    }
}

pub fn hash(conn: &mut Connection, key: &str) -> HashMap<String, u64> {
    redis::cmd("HGETALL").arg(key).query(conn).expect("HGETALL")
}

pub fn list_len(conn: &mut Connection, key: &str) -> u64 {
    redis::cmd("LLEN").arg(key).query(conn).expect("LLEN")
}

pub fn pending_ids(conn: &mut Connection, keys: &Keys, consumer: &str) -> Vec<String> {
    let pending: Vec<(String, String, u64, u64)> = redis::cmd("XPENDING")
        .arg(&keys.stream)
        .arg(GROUP)
        .arg("-")
        .arg("+")
        .arg(1_000_000)
        .arg(consumer)
        .query(conn)
        .expect("XPENDING");
    pending.into_iter().map(|(id, ..)| id).collect()
}

pub fn pending_count(conn: &mut Connection, keys: &Keys) -> u64 {
    let summary: (u64, redis::Value, redis::Value, redis::Value) = redis::cmd("XPENDING")
        .arg(&keys.stream)
        .arg(GROUP)
        .query(conn)
        .expect("XPENDING");
    summary.0
}

pub fn peak_pending(conn: &mut Connection, keys: &Keys) -> u64 {
    hash(conn, &keys.peaks).into_values().max().unwrap_or(0)
}

pub fn repeats(conn: &mut Connection, keys: &Keys) -> u64 {
    hash(conn, &keys.repeats).into_values().sum()
}

/// Entries that ran more than once.
pub fn duplicate_runs(conn: &mut Connection, keys: &Keys) -> Vec<String> {
    let mut ids: Vec<String> = hash(conn, &keys.runs)
        .into_iter()
        .filter(|(_, runs)| *runs > 1)
        .map(|(id, _)| id)
        .collect();
    ids.sort();
    ids
}

/// Commits in a consumer's log whose entry id is below the one before it, and
/// all its commits.
pub fn out_of_order_commits(conn: &mut Connection, keys: &Keys, consumer: &str) -> (u64, u64) {
    let log: Vec<String> = redis::cmd("LRANGE")
        .arg(keys.log(consumer))
        .arg(0)
        .arg(-1)
        .query(conn)
        .expect("LRANGE");
    let ids: Vec<(u64, u64)> = log.iter().map(|id| entry_id(id)).collect();
    let late = ids.windows(2).filter(|pair| pair[1] < pair[0]).count();
    (late as u64, ids.len() as u64)
}

fn entry_id(id: &str) -> (u64, u64) {
    let (ms, seq) = id.split_once('-').expect("an entry id");
    (
        ms.parse().expect("milliseconds"),
        seq.parse().expect("a sequence number"),
    )
}
