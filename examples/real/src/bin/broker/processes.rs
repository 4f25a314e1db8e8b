//! The orchestrator's processes: one scenario's consumers, reclaimer and
//! producer started as processes of this program, its event (a kill or a
//! graceful stop) on the way, and every process stopped at the end.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use redis::Connection;

use crate::lua::{self, GROUP, Keys};
use crate::records::{delete_keys, pending_ids};
use crate::run::{Event, PAGE, PATIENCE, STALL, Scenario, Seen, WAITING, WORKERS};

/// Starts the processes of one scenario, produces the jobs, waits until every
/// job is resolved and nothing is pending, with the scenario's event on the
/// way, then stops every process with SIGTERM.
pub fn execute(
    url: &str,
    conn: &mut Connection,
    keys: &Keys,
    scenario: &Scenario,
    jobs: u64,
    min_idle: u64,
) -> Seen {
    delete_keys(conn, &format!("{}:*", scenario.prefix));
    redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(&keys.stream)
        .arg(GROUP)
        .arg("0")
        .arg("MKSTREAM")
        .query::<()>(conn)
        .expect("XGROUP CREATE");
    let exe = std::env::current_exe().expect("this program's path");
    let spawn = |role: &str, extra: &[String]| -> Child {
        Command::new(&exe)
            .arg(role)
            .args(["--redis", url, "--prefix", &scenario.prefix])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("a process of this program")
    };
    let budgets = |name: &str| {
        let mut extra: Vec<String> = [
            ("name", name.to_string()),
            ("workers", WORKERS.to_string()),
            ("waiting", WAITING.to_string()),
            ("page", PAGE.to_string()),
            ("min-idle-ms", min_idle.to_string()),
        ]
        .into_iter()
        .flat_map(|(flag, value)| [format!("--{flag}"), value])
        .collect();
        if let Some(window) = scenario.window {
            extra.extend(["--window".to_string(), window.to_string()]);
        }
        extra
    };
    let mut processes = Processes(
        scenario
            .names()
            .into_iter()
            .map(|name| {
                let role = if name == "reclaimer" {
                    "reclaim"
                } else {
                    "consume"
                };
                let child = spawn(role, &budgets(&name));
                (name, Some(child))
            })
            .collect(),
    );
    let ready_by = Instant::now() + PATIENCE;
    while redis::cmd("HLEN")
        .arg(&keys.ready)
        .query::<usize>(conn)
        .expect("HLEN")
        < processes.0.len()
    {
        assert!(Instant::now() < ready_by, "the consumers never connected");
        std::thread::sleep(Duration::from_millis(5));
    }

    let mut seen = Seen::default();
    let start = Instant::now();
    processes.0.push((
        "producer".to_string(),
        Some(spawn("produce", &["--jobs".to_string(), jobs.to_string()])),
    ));
    let mut event_done = scenario.event.is_none();
    let mut last_progress = (Instant::now(), [0; 4]);
    let mut event_time = None;
    let mut stopping = false;
    loop {
        let [pending, lag, applied, dead]: [i64; 4] = lua::PROGRESS
            .key(&keys.stream)
            .key(&keys.applied)
            .key(&keys.dead)
            .arg(GROUP)
            .invoke::<Vec<i64>>(conn)
            .expect("the progress script")
            .try_into()
            .expect("four figures");
        let resolved = (applied + dead) as u64;
        if resolved == jobs && pending == 0 && lag == 0 {
            seen.elapsed = start.elapsed();
            seen.finished = true;
            break;
        }
        if [pending, lag, applied, dead] != last_progress.1 {
            last_progress = (Instant::now(), [pending, lag, applied, dead]);
        } else if last_progress.0.elapsed() > STALL || start.elapsed() > PATIENCE {
            seen.elapsed = start.elapsed();
            println!(
                "  no progress for {:.0} s: {resolved} of {jobs} jobs resolved, {pending} pending, {lag} not delivered",
                last_progress.0.elapsed().as_secs_f64()
            );
            break;
        }
        if !event_done && resolved * 3 >= jobs {
            event_done = true;
            event_time = Some(Instant::now());
            match scenario.event {
                Some(Event::Kill) => {
                    let mut child = processes.0[0].1.take().expect("c0 runs");
                    seen.killed_at = resolved;
                    child.kill().expect("SIGKILL");
                    child.wait().expect("the killed consumer's status");
                    // Whatever it sent before it died has reached the server
                    // by now; what is left pending for it is what it lost.
                    std::thread::sleep(Duration::from_millis(50));
                    seen.crash_pending = pending_ids(conn, keys, "c0");
                    if !seen.crash_pending.is_empty() {
                        redis::cmd("SADD")
                            .arg(&keys.crash)
                            .arg(&seen.crash_pending)
                            .query::<()>(conn)
                            .expect("SADD");
                    }
                }
                Some(Event::Stop) => {
                    seen.stopped_at = resolved;
                    terminate(processes.0[0].1.as_ref().expect("c0 runs"));
                    stopping = true;
                }
                None => unreachable!(),
            }
        }
        if scenario.event == Some(Event::Kill)
            && seen.taken_over_after.is_none()
            && event_time.is_some()
            && pending_ids(conn, keys, "c0").is_empty()
        {
            seen.taken_over_after = event_time.map(|time| time.elapsed());
        }
        if stopping
            && let Some(child) = processes.0[0].1.as_mut()
            && let Some(status) = child.try_wait().expect("the stopped consumer's status")
        {
            seen.stop_took = event_time.map(|time| time.elapsed());
            seen.stop_status = Some(status);
            seen.stop_pending = Some(pending_ids(conn, keys, "c0").len() as u64);
            let line = last_line(child);
            seen.exits.push(("c0".to_string(), Some(status), line));
            processes.0[0].1 = None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let (_, producer) = processes.0.pop().expect("the producer");
    producer
        .expect("the producer")
        .wait()
        .expect("the producer's status");

    // Every process left gets SIGTERM: a graceful stop with nothing to do.
    for (_, child) in &processes.0 {
        if let Some(child) = child {
            terminate(child);
        }
    }
    for (name, child) in &mut processes.0 {
        let Some(mut child) = child.take() else {
            continue;
        };
        let by = Instant::now() + STALL;
        let status = loop {
            if let Some(status) = child.try_wait().expect("a consumer's status") {
                break Some(status);
            }
            if Instant::now() > by {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        if name == "c0" && scenario.event == Some(Event::Stop) && seen.stop_status.is_none() {
            seen.stop_status = status;
            seen.stop_pending = Some(pending_ids(conn, keys, "c0").len() as u64);
        }
        let line = last_line(&mut child);
        seen.exits.push((name.clone(), status, line));
    }
    seen
}

/// The processes of a scenario, killed if the orchestrator leaves early (a
/// panic): none outlives it.
struct Processes(Vec<(String, Option<Child>)>);

impl Drop for Processes {
    fn drop(&mut self) {
        for (_, child) in &mut self.0 {
            if let Some(child) = child {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

fn terminate(child: &Child) {
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .expect("kill -TERM");
    assert!(status.success(), "kill -TERM {} failed", child.id());
}

fn last_line(child: &mut Child) -> String {
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    out.lines().last().unwrap_or("(no output)").to_string()
}
