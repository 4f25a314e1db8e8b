//! The crate in an import job over SQLite (rusqlite, bundled): rows read page by
//! page on tokio's blocking pool (`stream::unfold`), each enriched by an async
//! lookup (a stand-in for a remote service: a timer of a few ms), written back
//! in input order with `.ordered(..)`. The in-place run is stopped halfway with
//! `close()` and resumed from the same source; the spawned run goes straight
//! through. Each is compared with `buffered(n)` from `futures` in the same run.
//! Three rounds; the table shows the medians.
//!
//! ```sh
//! cargo run --release -p real --bin sqlite            # 20,000 rows
//! cargo run --release -p real --bin sqlite -- 2000    # or BB_REAL_SIZE=2000
//! ```
//!
//! It exits non-zero if a check fails: every row written exactly once, in input
//! order, with the expected enrichment; after `close()`, every row pulled is
//! yielded before the stream ends and the resume writes the rest.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bounded_buffered::{BoundedBuffered, BoundedStreamExt, Stats};
use futures::{Stream, StreamExt, TryStreamExt, stream};
use real::{Checks, comparison_header, comparison_line, median};
use rusqlite::{Connection, params};
use tokio::task::spawn_blocking;

/// Lookups running at once, in the adapter and in `buffered`.
const WORKERS: usize = 64;
/// Rows the adapter lines up ahead of the workers.
const WAITING: usize = 64;
/// Enriched rows `.ordered(..)` may hold behind a slow lookup.
const WINDOW: usize = 256;
/// Rows a page read takes from the source table.
const PAGE: usize = 500;
/// Rows a write transaction puts in the target table.
const BATCH: usize = 500;
const ROUNDS: usize = 3;

type BoxError = Box<dyn Error + Send + Sync>;

#[tokio::main]
async fn main() -> ExitCode {
    let rows = real::size(20_000);
    let db = Database::create(rows).expect("a database in the temporary directory");
    let half = rows / 2;
    println!(
        "sqlite: {rows} rows in SQLite (rusqlite, bundled), read in pages of {PAGE} on spawn_blocking, \
         each enriched by a lookup of 1-4 ms (1 in 100: 25 ms), written back in input order, \
         {BATCH} rows a transaction"
    );
    println!(
        "  adapter: {WORKERS} workers, {WAITING} waiting, window {WINDOW}; futures: buffered({WORKERS})"
    );
    println!(
        "  the adapter's in-place run calls close() after {half} rows, drains, and resumes from the same source"
    );
    println!(
        "  {ROUNDS} rounds, adapter and futures alternating first; medians; ratio = adapter / futures"
    );

    let mut checks = Checks::default();
    let mut times: [[Vec<Duration>; 2]; 2] = Default::default();
    for round in 0..ROUNDS {
        let futures_first = round % 2 == 1;
        for (scenario, spawned) in [false, true].into_iter().enumerate() {
            for side in if futures_first { [1, 0] } else { [0, 1] } {
                db.clear_target().expect("the target table cleared");
                let start = Instant::now();
                let run = match (side, spawned) {
                    (0, false) => close_and_resume(&db, half).await,
                    (0, true) => adapter_spawned(&db).await,
                    (_, false) => futures_buffered(&db).await,
                    (_, true) => futures_spawned(&db).await,
                };
                let elapsed = start.elapsed();
                times[scenario][side].push(elapsed);
                let name = match (side, spawned) {
                    (0, false) => "adapter, in place, closed halfway and resumed",
                    (0, true) => "adapter, spawned",
                    (_, false) => "futures, buffered",
                    (_, true) => "futures, tokio::spawn + buffered",
                };
                check(&db, &mut checks, name, rows, run);
            }
        }
    }

    println!("{}", comparison_header());
    let names = [
        (
            format!("bounded({WORKERS}, {WAITING}).ordered({WINDOW}), close + resume"),
            format!("buffered({WORKERS})"),
        ),
        (
            format!("bounded({WORKERS}, {WAITING}).ordered({WINDOW}).spawn_on"),
            format!("tokio::spawn + buffered({WORKERS})"),
        ),
    ];
    for ((adapter, futures), [ours, theirs]) in names.iter().zip(times) {
        println!(
            "{}",
            comparison_line(adapter, futures, median(ours), median(theirs))
        );
    }
    let outcome = checks.report();
    db.remove();
    outcome
}

// ------------------------------------------------------------------ the data

struct Row {
    id: i64,
    name: String,
    amount: i64,
}

struct Enriched {
    id: i64,
    label: String,
}

/// What the enrichment makes of a row; the check computes it again from the
/// row's id, as the source was created.
fn label(name: &str, amount: i64) -> String {
    let tier = match amount {
        0..1_000 => "bronze",
        1_000..5_000 => "silver",
        _ => "gold",
    };
    format!("{name}: {tier}")
}

fn amount_of(id: i64) -> i64 {
    scattered(id) % 10_000
}

/// Knuth's multiplicative hash: spreads consecutive ids over the range.
fn scattered(id: i64) -> i64 {
    i64::from((id as u32).wrapping_mul(2_654_435_761) >> 8)
}

/// The enrichment: an async lookup of 1 to 4 ms, 25 ms for 1 row in 100.
async fn enrich(row: Row) -> Result<Enriched, BoxError> {
    let spread = scattered(row.id);
    let ms = if spread % 100 == 0 {
        25
    } else {
        1 + spread % 4
    };
    tokio::time::sleep(Duration::from_millis(ms as u64)).await;
    Ok(Enriched {
        id: row.id,
        label: label(&row.name, row.amount),
    })
}

// -------------------------------------------------------------- the database

struct Database {
    path: PathBuf,
}

impl Database {
    /// A new database file with `rows` rows in `source` and an empty `target`,
    /// whose `seq` records the order rows were written in.
    fn create(rows: usize) -> Result<Self, BoxError> {
        let path = std::env::temp_dir().join(format!("bb-real-sqlite-{}.db", std::process::id()));
        let db = Self { path };
        db.remove();
        let mut connection = db.open()?;
        connection.execute_batch(
            "CREATE TABLE source (id INTEGER PRIMARY KEY, name TEXT NOT NULL, amount INTEGER NOT NULL);
             CREATE TABLE target (seq INTEGER PRIMARY KEY AUTOINCREMENT, id INTEGER NOT NULL, label TEXT NOT NULL);",
        )?;
        let transaction = connection.transaction()?;
        {
            let mut insert =
                transaction.prepare("INSERT INTO source (id, name, amount) VALUES (?1, ?2, ?3)")?;
            for id in 1..=rows as i64 {
                insert.execute(params![id, format!("customer {id}"), amount_of(id)])?;
            }
        }
        transaction.commit()?;
        Ok(db)
    }

    fn open(&self) -> rusqlite::Result<Connection> {
        let connection = Connection::open(&self.path)?;
        // WAL: the page reads and the writes of one run do not block each other.
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        Ok(connection)
    }

    fn clear_target(&self) -> rusqlite::Result<()> {
        self.open()?
            .execute_batch("DELETE FROM target; DELETE FROM sqlite_sequence WHERE name = 'target';")
    }

    /// The target's rows, in the order they were written.
    fn written(&self) -> rusqlite::Result<Vec<(i64, String)>> {
        let connection = self.open()?;
        let mut select = connection.prepare("SELECT id, label FROM target ORDER BY seq")?;
        select
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect()
    }

    fn remove(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut file = self.path.clone().into_os_string();
            file.push(suffix);
            let _ = std::fs::remove_file(Path::new(&file)); // absent is fine
        }
    }
}

/// The source: pages of rows in id order, each read on the blocking pool with
/// keyset pagination (the next page starts after the last id read).
fn pages(reader: Connection) -> impl Stream<Item = Result<Vec<Row>, BoxError>> {
    stream::unfold(Some((reader, 0_i64)), |state| async move {
        let (reader, after) = state?;
        let read = spawn_blocking(move || {
            let page = read_page(&reader, after);
            (reader, page)
        })
        .await;
        match read {
            Ok((reader, Ok(page))) => {
                let last = page.last()?.id; // an empty page: the table is read
                Some((Ok(page), Some((reader, last))))
            }
            Ok((_, Err(error))) => Some((Err(error.into()), None)),
            Err(join) => Some((Err(join.into()), None)),
        }
    })
}

fn read_page(reader: &Connection, after: i64) -> rusqlite::Result<Vec<Row>> {
    let mut select = reader
        .prepare_cached("SELECT id, name, amount FROM source WHERE id > ?1 ORDER BY id LIMIT ?2")?;
    select
        .query_map(params![after, PAGE as i64], |row| {
            Ok(Row {
                id: row.get(0)?,
                name: row.get(1)?,
                amount: row.get(2)?,
            })
        })?
        .collect()
}

/// Rows one at a time, each an enrichment future; a read error becomes that
/// item's output.
fn enrichments(
    pages: impl Stream<Item = Result<Vec<Row>, BoxError>>,
) -> impl Stream<Item = impl Future<Output = Result<Enriched, BoxError>>> {
    pages
        .map_ok(|page| stream::iter(page.into_iter().map(Ok)))
        .try_flatten()
        .map(|row: Result<Row, BoxError>| async move { enrich(row?).await })
}

/// Writes batches of rows in one transaction each, on the blocking pool.
struct Writer {
    connection: Option<Connection>,
}

impl Writer {
    fn new(db: &Database) -> rusqlite::Result<Self> {
        Ok(Self {
            connection: Some(db.open()?),
        })
    }

    async fn write(&mut self, batch: Vec<Enriched>) -> Result<(), BoxError> {
        let mut connection = self.connection.take().ok_or("a write failed before")?;
        let (connection, written) = spawn_blocking(move || {
            let written = insert(&mut connection, &batch);
            (connection, written)
        })
        .await?;
        self.connection = Some(connection);
        Ok(written?)
    }
}

fn insert(connection: &mut Connection, batch: &[Enriched]) -> rusqlite::Result<()> {
    let transaction = connection.transaction()?;
    {
        let mut insert =
            transaction.prepare_cached("INSERT INTO target (id, label) VALUES (?1, ?2)")?;
        for row in batch {
            insert.execute(params![row.id, row.label])?;
        }
    }
    transaction.commit()
}

/// The consumer: writes the enriched rows in the order the stream yields them,
/// `BATCH` at a time; calls `at_row(stream, rows_so_far)` after each row (the
/// in-place run closes the stream from there). Returns how many rows it wrote.
async fn write_all<S>(
    enriched: &mut S,
    writer: &mut Writer,
    mut at_row: impl FnMut(&S, usize),
) -> Result<usize, BoxError>
where
    S: Stream<Item = Result<Enriched, BoxError>> + Unpin,
{
    let mut written = 0;
    let mut batch = Vec::with_capacity(BATCH);
    while let Some(row) = enriched.next().await {
        batch.push(row?);
        written += 1;
        at_row(enriched, written);
        if batch.len() == BATCH {
            writer
                .write(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)))
                .await?;
        }
    }
    writer.write(batch).await?;
    Ok(written)
}

// ------------------------------------------------------------- the scenarios

/// What a run reports besides the rows it wrote.
struct Run {
    outcome: Result<(), BoxError>,
    /// The adapter's stats, once per stream (two for a closed and resumed run).
    stats: Vec<Stats>,
    /// For the closed run: rows written before the stream ended, and after the resume.
    phases: Option<(usize, usize)>,
}

/// The pipeline of both runs: the enrichments under the budgets, their outputs
/// in input order.
fn in_order<S>(enrichments: S) -> BoundedBuffered<S>
where
    S: Stream<Item: Future>,
{
    enrichments.bounded(WORKERS, WAITING).ordered(WINDOW)
}

/// In place, ordered; `close()` after `half` rows, then the stream drains and
/// ends, and `reopen()` resumes it from the same source: an `unfold` source,
/// which is not `Unpin`, and needs no boxing (the stream is `Unpin` itself).
async fn close_and_resume(db: &Database, half: usize) -> Run {
    let mut stats = Vec::new();
    let mut phases = (0, 0);
    let outcome = async {
        let mut writer = Writer::new(db)?;
        let mut enriched = in_order(enrichments(pages(db.open()?)));
        phases.0 = write_all(&mut enriched, &mut writer, |enriched, written| {
            if written == half {
                enriched.close(); // finishes what it pulled, then ends
            }
        })
        .await?;
        stats.push(enriched.stats());
        enriched.reopen(); // the same stream pulls again, from the next row
        phases.1 = write_all(&mut enriched, &mut writer, |_, _| {}).await?;
        stats.push(enriched.stats());
        Ok(())
    }
    .await;
    Run {
        outcome,
        stats,
        phases: Some(phases),
    }
}

/// Spawned, ordered, straight through.
async fn adapter_spawned(db: &Database) -> Run {
    let mut stats = Vec::new();
    let outcome = async {
        let mut writer = Writer::new(db)?;
        let mut enriched =
            in_order(enrichments(pages(db.open()?))).spawn_on(tokio::runtime::Handle::current());
        write_all(&mut enriched, &mut writer, |_, _| {}).await?;
        stats.push(enriched.stats());
        Ok(())
    }
    .await;
    Run {
        outcome,
        stats,
        phases: None,
    }
}

/// futures' `buffered`, straight through (it has no way to stop without
/// dropping the rows it has started).
async fn futures_buffered(db: &Database) -> Run {
    let outcome = async {
        let mut writer = Writer::new(db)?;
        let mut enriched = Box::pin(enrichments(pages(db.open()?)).buffered(WORKERS));
        write_all(&mut enriched, &mut writer, |_, _| {}).await?;
        Ok(())
    }
    .await;
    Run {
        outcome,
        stats: Vec::new(),
        phases: None,
    }
}

/// A task per row, `buffered` over the join handles.
async fn futures_spawned(db: &Database) -> Run {
    let outcome = async {
        let mut writer = Writer::new(db)?;
        let mut enriched = Box::pin(
            enrichments(pages(db.open()?))
                .map(tokio::spawn)
                .buffered(WORKERS)
                .map(|joined| joined?),
        );
        write_all(&mut enriched, &mut writer, |_, _| {}).await?;
        Ok(())
    }
    .await;
    Run {
        outcome,
        stats: Vec::new(),
        phases: None,
    }
}

// ---------------------------------------------------------------- the checks

fn check(db: &Database, checks: &mut Checks, name: &str, rows: usize, run: Run) {
    let named = |what: &str| format!("{name}: {what}");
    checks.check(
        &named("the import ran without error"),
        run.outcome.is_ok(),
        || match &run.outcome {
            Err(error) => error.to_string(),
            Ok(()) => String::new(),
        },
    );
    let written = db.written().expect("the target table read back");
    let first_wrong = written
        .iter()
        .enumerate()
        .position(|(index, (id, written_label))| {
            let expected = label(&format!("customer {id}"), amount_of(*id));
            *id != index as i64 + 1 || *written_label != expected
        });
    checks.check(
        &named("every row written exactly once, in input order, enriched as expected"),
        written.len() == rows && first_wrong.is_none(),
        || match first_wrong {
            Some(index) => format!(
                "row {} of {} is id {} with label {:?}",
                index + 1,
                written.len(),
                written[index].0,
                written[index].1
            ),
            None => format!("{} rows written for {rows}", written.len()),
        },
    );
    for stats in &run.stats {
        checks.observe(&named("most rows held for order"), stats.peak_held as u64);
        checks.check(
            &named(&format!(
                "stats: at most {WORKERS} active, {WAITING} waiting, {WINDOW} held"
            )),
            stats.peak_active <= WORKERS
                && stats.peak_waiting <= WAITING
                && stats.peak_held <= WINDOW,
            || format!("{stats:?}"),
        );
    }
    if let (Some((before, after)), Some(closed)) = (run.phases, run.stats.first()) {
        checks.observe(
            &named(&format!("rows yielded after close() at row {}", rows / 2)),
            before.saturating_sub(rows / 2) as u64,
        );
        checks.check(
            &named("after close() the stream yielded every row it had pulled, then ended"),
            before as u64 == closed.pulled && before >= rows / 2,
            || format!("yielded {before}, pulled {}", closed.pulled),
        );
        checks.check(
            &named("the resume wrote the rest"),
            before + after == rows,
            || format!("{before} rows before the close, {after} after the resume, of {rows}"),
        );
        if let Some(resumed) = run.stats.get(1) {
            // The stats carry on across `reopen`: every row pulled once in all.
            checks.check(
                &named("across close and reopen, every row was pulled once"),
                resumed.pulled == rows as u64 && resumed.completed == rows as u64,
                || format!("{resumed:?}"),
            );
        }
    }
}
